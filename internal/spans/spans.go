// Package spans puts the work of a turn in one OpenTelemetry trace,
// whichever node does it: a turn's trace ID and its root span's ID are
// derived from the turn's ID, so the model calls, the gate's decisions,
// the tools, the commands and the approval waits of one turn (each a
// Temporal activity, on any node, retried or replayed) are children of
// one root without a trace context carried through workflow history.
// The root span itself is written when the turn ends, by the node that
// records its end, with the turn's start as its start.
//
// It depends on OpenTelemetry's API alone: with no tracer (nil) every
// span is a no-op.
package spans

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Turn is a turn's trace ID and the ID of its root span.
func Turn(turnID string) (trace.TraceID, trace.SpanID) {
	sum := sha256.Sum256([]byte("paddock-turn\x00" + turnID))
	var t trace.TraceID
	var s trace.SpanID
	copy(t[:], sum[:16])
	copy(s[:], sum[16:24])
	return t, s
}

// TraceID is a turn's trace ID, as backends show it (hex).
func TraceID(turnID string) string {
	t, _ := Turn(turnID)
	return t.String()
}

// InTurn is ctx whose spans are children of the turn's root (unless ctx
// holds a span of this turn already).
func InTurn(ctx context.Context, turnID string) context.Context {
	if turnID == "" {
		return ctx
	}
	t, s := Turn(turnID)
	if cur := trace.SpanContextFromContext(ctx); cur.IsValid() && cur.TraceID() == t {
		return ctx
	}
	ctx = context.WithValue(ctx, turned{}, true)
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: t, SpanID: s, TraceFlags: trace.FlagsSampled, Remote: true}))
}

type turned struct{}

// InATurn says whether spans started in ctx are a turn's (InTurn, Root):
// a sampler keeps or drops them together, by their trace ID.
func InATurn(ctx context.Context) bool {
	_, root := ctx.Value(forced{}).([2][]byte)
	return root || ctx.Value(turned{}) != nil
}

// Start starts a span of the turn's trace with tracer (nil: a no-op).
func Start(ctx context.Context, tracer trace.Tracer, turnID, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer("")
	}
	return tracer.Start(InTurn(ctx, turnID), name, opts...)
}

// End ends span, failed when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Root writes a turn's root span, from its start to its end, with the
// IDs Turn derives (the tracer's provider must use IDs as its ID
// generator).
func Root(ctx context.Context, tracer trace.Tracer, turnID, name string, start, end time.Time, attrs ...attribute.KeyValue) {
	if tracer == nil {
		return
	}
	t, s := Turn(turnID)
	_, span := tracer.Start(context.WithValue(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), forced{}, [2][]byte{t[:], s[:]}),
		name, trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(end))
}

type forced struct{}

// IDs is the ID generator of a tracer provider whose turns' roots Root
// writes: random IDs, but for a root whose IDs Root chose.
type IDs struct{}

// NewIDs implements the SDK's IDGenerator.
func (IDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(forced{}).([2][]byte); ok {
		var t trace.TraceID
		var s trace.SpanID
		copy(t[:], f[0])
		copy(s[:], f[1])
		return t, s
	}
	var t trace.TraceID
	_, _ = rand.Read(t[:])
	return t, IDs{}.NewSpanID(ctx, t)
}

// NewSpanID implements the SDK's IDGenerator.
func (IDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
