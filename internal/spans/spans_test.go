package spans

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestATurnIsOneTrace: spans started in a turn (on any tracer, as on
// any node) and the root written at its end share the turn's trace, with
// the root as their parent; another turn's are another trace.
func TestATurnIsOneTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	node := func() *sdktrace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(IDs{}))
	}
	a, b := node().Tracer("a"), node().Tracer("b")
	ctx, model := Start(context.Background(), a, "turn-1", "chat")
	_, command := Start(ctx, b, "turn-1", "command") // a child of the model's span: the same turn
	command.End()
	model.End()
	_, gate := Start(context.Background(), b, "turn-1", "gate")
	gate.End()
	_, other := Start(context.Background(), a, "turn-2", "gate")
	other.End()
	start := time.Now().Add(-time.Minute)
	Root(context.Background(), b, "turn-1", "turn", start, time.Now())

	traceID, rootID := Turn("turn-1")
	got := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		got[s.Name()+"/"+s.SpanContext().TraceID().String()] = s
	}
	root := got["turn/"+traceID.String()]
	require.NotNil(t, root)
	require.Equal(t, rootID, root.SpanContext().SpanID())
	require.False(t, root.Parent().IsValid())
	require.WithinDuration(t, start, root.StartTime(), time.Millisecond)
	require.Equal(t, rootID, got["chat/"+traceID.String()].Parent().SpanID())
	require.Equal(t, rootID, got["gate/"+traceID.String()].Parent().SpanID())
	require.Equal(t, got["chat/"+traceID.String()].SpanContext().SpanID(), got["command/"+traceID.String()].Parent().SpanID())
	otherTrace, _ := Turn("turn-2")
	require.NotEqual(t, traceID, otherTrace)
	require.NotNil(t, got["gate/"+otherTrace.String()])
	// Without a tracer nothing is traced, and nothing fails.
	_, span := Start(context.Background(), nil, "turn-1", "x")
	End(span, context.Canceled)
	Root(context.Background(), nil, "turn-1", "turn", start, time.Now())
}
