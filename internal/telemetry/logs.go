package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/paddock-dev/paddock/internal/secret"
	"go.opentelemetry.io/otel/trace"
)

// Logger is logger whose records never carry a detected secret (their
// message and every string or error in them redacted, as the record of
// sessions is) and carry the request ID and trace ID of the context they
// were logged in.
func Logger(logger *slog.Logger) *slog.Logger {
	if _, ok := logger.Handler().(redacting); ok {
		return logger
	}
	return slog.New(redacting{logger.Handler()})
}

type redacting struct{ next slog.Handler }

func (h redacting) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redacting) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	if id := RequestID(ctx); id != "" {
		out.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		out.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
	}
	return h.next.Handle(ctx, out)
}

func (h redacting) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return redacting{h.next.WithAttrs(clean)}
}

func (h redacting) WithGroup(name string) slog.Handler { return redacting{h.next.WithGroup(name)} }

func redact(s string) string {
	out, _ := secret.Redact(s)
	return out
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = redactAttr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redact(err.Error()))
		}
		switch x := v.Any().(type) {
		case []byte:
			return slog.String(a.Key, redact(string(x)))
		case json.RawMessage:
			return slog.String(a.Key, redact(string(x)))
		}
		if data, err := json.Marshal(v.Any()); err == nil {
			return slog.String(a.Key, redact(string(data)))
		}
		return slog.String(a.Key, redact(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

type requestKey struct{}

// WithRequestID is ctx carrying a request's ID.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// RequestID is the ID of the request ctx serves ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestKey{}).(string)
	return id
}
