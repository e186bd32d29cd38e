package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Command runs one sandboxed command in a span of its own, and counts it.
func (m *Metrics) Command(ctx context.Context, run func(context.Context) (sandbox.Result, error)) (sandbox.Result, error) {
	ctx, span := m.tracer.Start(ctx, "command")
	res, err := run(ctx)
	span.SetAttributes(attribute.Int("process.exit.code", res.ExitCode), attribute.Bool("paddock.command.timed_out", res.TimedOut),
		attribute.Float64("paddock.command.cpu_seconds", res.Use.CPU.Seconds()), attribute.Int64("paddock.command.peak_memory_bytes", res.Use.PeakMemory))
	if err != nil {
		span.SetStatus(codes.Error, "not run")
	}
	span.End()
	m.count(res, err)
	return res, err
}

// count counts one sandboxed command.
func (m *Metrics) count(res sandbox.Result, err error) {
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case res.TimedOut:
		outcome = "timed_out"
	case res.ExitCode != 0:
		outcome = "failed"
	}
	m.commands.WithLabelValues(outcome).Inc()
	if err != nil {
		return
	}
	m.commandSeconds.Observe(res.Duration.Seconds())
	m.commandCPU.Add(res.Use.CPU.Seconds())
	if res.Use.PeakMemory > 0 {
		m.commandMemory.Observe(float64(res.Use.PeakMemory))
	}
	m.commandWritten.Add(float64(res.Use.Written))
}

// Factory meters the providers f makes, as name's.
func (m *Metrics) Factory(name string, f provider.Factory) provider.Factory {
	return func(model string) (provider.Provider, error) {
		p, err := f(model)
		if err != nil {
			return nil, err
		}
		return metered{Provider: p, m: m, provider: name, model: m.models.of(model)}, nil
	}
}

// metered counts, times and weighs one provider's calls.
type metered struct {
	provider.Provider
	m               *Metrics
	provider, model string
}

func (p metered) Stream(ctx context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	started := time.Now()
	// GenAI semantic conventions: the operation, the provider, the model,
	// the tokens; never the messages.
	ctx, span := p.m.tracer.Start(ctx, "chat "+p.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", p.provider), attribute.String("gen_ai.request.model", p.model)))
	defer span.End()
	var first sync.Once
	resp, err := p.Provider.Stream(ctx, req, func(d provider.Delta) {
		first.Do(func() { p.m.modelFirst.WithLabelValues(p.provider, p.model).Observe(time.Since(started).Seconds()) })
		sink(d)
	})
	p.m.modelSeconds.WithLabelValues(p.provider, p.model).Observe(time.Since(started).Seconds())
	outcome := "ok"
	if f := provider.Classify(err); err != nil {
		switch {
		case errors.Is(err, context.Canceled):
			outcome = "canceled"
		case f != "":
			outcome = string(f)
		default:
			outcome = "error"
		}
	}
	p.m.modelCalls.WithLabelValues(p.provider, p.model, outcome).Inc()
	span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", resp.Usage.InputTokens), attribute.Int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens))
	if resp.StopReason != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.StopReason}))
	}
	if err != nil {
		span.SetStatus(codes.Error, outcome)
	}
	p.m.modelTokens.WithLabelValues(p.provider, p.model, "input").Add(float64(max(resp.Usage.InputTokens, 0)))
	p.m.modelTokens.WithLabelValues(p.provider, p.model, "output").Add(float64(max(resp.Usage.OutputTokens, 0)))
	return resp, err
}
