package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/paddock-dev/paddock/internal/spans"
)

// Tracer is the node's tracer and what ends it (flushing what it holds).
type Tracer struct {
	trace.Tracer
	Shutdown func(context.Context) error
}

// Tracing sends the node's spans to an OTLP endpoint over protocol
// ("grpc" or "http/protobuf"), as OpenTelemetry's standard variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, …_HEADERS, …_INSECURE) configure it;
// protocol "" traces nothing. It keeps ratio of the traces (turnSampler);
// its spans name the service paddock, this node and the version; turns'
// roots get their IDs from spans.IDs.
func Tracing(ctx context.Context, protocol string, ratio float64, node, version string) (Tracer, error) {
	if protocol == "" {
		return Tracer{Shutdown: func(context.Context) error { return nil }}, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return Tracer{}, fmt.Errorf("OpenTelemetry traces (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", "paddock"),
		attribute.String("service.instance.id", node), attribute.String("service.version", version)))
	if err != nil {
		return Tracer{}, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	byID := sdktrace.TraceIDRatioBased(ratio)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(spans.IDs{}),
		sdktrace.WithSampler(turnSampler{base: sdktrace.ParentBased(byID), byID: byID}))
	return Tracer{Tracer: tp.Tracer("github.com/paddock-dev/paddock"), Shutdown: tp.Shutdown}, nil
}

// turnSampler keeps or drops a turn's trace whole: its root (written at
// its end by spans.Root) and the spans of its work (under the parent
// spans.InTurn derives, which says "sampled" to any parent-based
// sampler) are decided alike, by the trace ID; any other span as base
// decides.
type turnSampler struct{ base, byID sdktrace.Sampler }

func (s turnSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if spans.InATurn(p.ParentContext) {
		return s.byID.ShouldSample(p)
	}
	return s.base.ShouldSample(p)
}

func (s turnSampler) Description() string { return "turns whole, by trace ID; " + s.base.Description() }
