package telemetry

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// RequestHeader carries a request's ID: a caller's own is kept when it
// is a sane one (up to 64 letters, digits, '-', '_' or '.'), else one is
// made; the response names it.
const RequestHeader = "X-Request-Id"

// HTTP serves next with a request ID in the request's context and the
// response's header, counts and times every request by its route (the
// pattern that served it, never its path), and logs it (the access log:
// method, route, path, status, bytes, duration and the ID; never the
// query, which may carry what a person typed).
func (m *Metrics) HTTP(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started := time.Now()
		id := r.Header.Get(RequestHeader)
		if !saneID(id) {
			id = uuid.NewString()
		}
		w.Header().Set(RequestHeader, id)
		// Each request is a trace of its own, before anyone is
		// authenticated: a caller's traceparent is linked, never continued
		// (it could name any trace, a turn's among them).
		opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer)}
		if caller := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))); caller.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
		}
		path := clipped(r.URL.Path)
		ctx, span := m.tracer.Start(WithRequestID(r.Context(), id), r.Method, append(opts, trace.WithAttributes(
			attribute.String("http.request.method", r.Method), attribute.String("url.path", path), attribute.String("paddock.request_id", id)))...)
		r = r.WithContext(ctx)
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		defer func() { // after a panic too (the server recovers it)
			route := r.Pattern
			if route == "" || route == "/" {
				route = "unmatched"
			}
			span.SetName(route)
			span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", rec.status))
			if rec.status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(rec.status))
			}
			span.End()
			took := time.Since(started)
			m.httpRequests.WithLabelValues(route, strconv.Itoa(rec.status/100)+"xx").Inc()
			m.httpSeconds.WithLabelValues(route).Observe(took.Seconds())
			level := slog.LevelInfo
			if route == "GET /healthz" {
				level = slog.LevelDebug // a probe every few seconds
			}
			logger.LogAttrs(r.Context(), level, "request", slog.String("method", r.Method), slog.String("route", route),
				slog.String("path", path), slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", took), slog.String("remote", r.RemoteAddr))
		}()
		next.ServeHTTP(rec, r)
	})
}

// clipped is a request's path as logs and spans keep it: its first 256
// bytes (a path is the caller's to make as long as headers allow).
func clipped(path string) string {
	if len(path) <= 256 {
		return path
	}
	return strings.ToValidUTF8(path[:256], "") + "…"
}

func saneID(id string) bool { return identifier(id, 64, "-_.") }

// recorder notes a response's status and size, and passes on flushes
// (the event stream) and hijacks.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := r.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("hijacking is not supported")
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Handler serves the metrics at /metrics and the Go profiles under
// /debug/pprof/. With a token, every request must carry it as a bearer
// token (the listener is beyond loopback).
func (m *Metrics) Handler(token string) http.Handler {
	mux := http.NewServeMux()
	// One scrape at a time (each asks the store for a census), bounded.
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{MaxRequestsInFlight: 2, Timeout: 15 * time.Second}))
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	if token == "" {
		return mux
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="paddock metrics"`)
			http.Error(w, "metrics: send PADDOCK_METRICS_TOKEN as a bearer token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
