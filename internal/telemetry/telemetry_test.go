package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spans"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
)

type fakeCensus struct{ err error }

func (c fakeCensus) Census(context.Context) (store.Census, error) {
	return store.Census{Sessions: map[session.Status]int{session.StatusAwaiting: 2}, Parked: map[string]int{"awaiting_extension": 1}, Approvals: 3, Nodes: 1}, c.err
}

func TestRuleFamily(t *testing.T) {
	for rule, want := range map[string]string{
		"":                             "none",
		"commands.allow":               "commands",
		"command:refused.escalation":   "command",
		"floor:command:refused.x":      "floor",
		"default=ask":                  "default",
		"tools.write_file":             "tools",
		"evaluation-failed":            "evaluation-failed",
		"weird rule with spaces":       "other",
		strings.Repeat("a", 80) + ".x": "other",
	} {
		require.Equal(t, want, RuleFamily(rule), rule)
	}
}

// exercised is a node's metrics after one of everything, so that every
// family has a series.
func exercised(t *testing.T) *Metrics {
	m := New(Options{Node: "n1", Version: "test", Census: fakeCensus{}, Tools: tool.Set{"run_command": {}}})
	event := func(kind session.EventKind, v any) {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		m.Event(session.Event{Kind: kind, Data: data})
	}
	event(session.EventTurn, session.TurnData{Status: session.TurnCompleted})
	event(session.EventToolCall, session.ToolCallData{Name: "run_command", State: session.CallAwaitingApproval, Verdict: "ask", Rule: "default=ask"})
	event(session.EventToolCall, session.ToolCallData{Name: "made_up_tool_" + strings.Repeat("x", 10), State: session.CallRejected, Verdict: "refuse", Rule: "tools.x"})
	event(session.EventToolCall, session.ToolCallData{Name: "run_command", State: session.CallRejected}) // a person's rejection
	event(session.EventToolCall, session.ToolCallData{Name: "mcp__calc__add", State: session.CallDone})
	event(session.EventPark, session.ParkData{Park: session.Park{Reason: "awaiting_extension"}})
	event(session.EventBudget, session.BudgetData{Extension: true})
	event(session.EventNetwork, session.NetworkData{Phase: "command", Allowed: false, BytesUp: 10})
	event(session.EventPhase, session.PhaseData{Phase: session.RuntimePhase("cloning"), DurationMs: 30})
	s := Store{M: m}
	s.timed("claim_batch", time.Now())
	m.cost.WithLabelValues("replay", "x").Add(0.01)
	m.approvals.WithLabelValues("approved").Inc()
	m.decision.WithLabelValues("approved").Observe(3)
	_, _ = m.Command(context.Background(), func(context.Context) (sandbox.Result, error) {
		return sandbox.Result{ExitCode: 1, Duration: time.Second, Use: sandbox.Use{CPU: time.Second, PeakMemory: 1 << 20, Written: 4096}}, nil
	})
	m.AuditBroken()
	p, err := m.Factory("replay", func(string) (provider.Provider, error) { return failing{}, nil })("x")
	require.NoError(t, err)
	_, _ = p.Stream(context.Background(), provider.Request{}, func(provider.Delta) {})
	h := m.Temporal()
	h.WithTags(map[string]string{"task_queue": "q"}).Timer("temporal_workflow_task_schedule_to_start_latency").Record(time.Millisecond)
	h.Timer("temporal_activity_execution_latency").Record(time.Millisecond)
	h.Counter("temporal_activity_execution_failed").Inc(1)
	h.Gauge("temporal_sticky_cache_size").Update(3)
	h.Counter("temporal_request").Inc(1) // dropped
	m.HTTP(slog.New(slog.DiscardHandler), http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil))
	m.censusFailures.Add(0)
	return m
}

// failing is a provider whose calls fail as an outage does.
type failing struct{}

func (failing) Stream(context.Context, provider.Request, func(provider.Delta)) (provider.Response, error) {
	return provider.Response{}, &provider.StatusError{Status: 503, Err: errors.New("overloaded")}
}

func names(t *testing.T, m *Metrics) map[string]bool {
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, f := range families {
		out[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[f.GetName()+s] = true
			}
		}
	}
	return out
}

func TestLabelsAreBounded(t *testing.T) {
	m := exercised(t)
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	seen := map[string]map[string]bool{}
	for _, f := range families {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if seen[f.GetName()] == nil {
					seen[f.GetName()] = map[string]bool{}
				}
				seen[f.GetName()][l.GetName()+"="+l.GetValue()] = true
			}
		}
	}
	require.True(t, seen["paddock_tool_call_outcomes_total"]["tool=mcp"], "an MCP tool counts as mcp")
	require.True(t, seen["paddock_tool_calls_total"]["tool=other"], "a name the model made up counts as other")
	require.Equal(t, 1.0, gateCount(t, m, "run_command"), "asked once; the person's rejection is not the gate's")
	require.True(t, seen["paddock_model_calls_total"]["outcome=outage"])
	require.True(t, seen["paddock_temporal_queue_lag_seconds"]["kind=workflow"])
	require.True(t, seen["paddock_http_requests_total"]["route=unmatched"])
	require.NotContains(t, names(t, m), "temporal_request", "the SDK's other metrics are dropped")
	require.True(t, names(t, m)["paddock_sessions"], "the census")
}

func TestCensusFailureIsCounted(t *testing.T) {
	var logs bytes.Buffer
	m := New(Options{Census: fakeCensus{err: errors.New("database gone")}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	n := names(t, m)
	require.False(t, n["paddock_sessions"], "no census, no census gauges")
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "paddock_census_failures_total" {
			require.GreaterOrEqual(t, f.Metric[0].Counter.GetValue(), 1.0)
		}
	}
	require.Contains(t, logs.String(), "database gone")
}

func TestMetricsNeedTheirToken(t *testing.T) {
	m := New(Options{})
	h := m.Handler("s3cret-token")
	for auth, want := range map[string]int{"": 401, "Bearer wrong": 401, "Bearer s3cret-token": 200} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, want, w.Code, auth)
	}
}

// TestLogsNeverCarryASecret: a credential in a message, an attribute, an
// error or a group is redacted; the request's ID is added.
func TestLogsNeverCarryASecret(t *testing.T) {
	var out bytes.Buffer
	logger := Logger(slog.New(slog.NewJSONHandler(&out, nil)))
	const key = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	ctx := WithRequestID(context.Background(), "req-1")
	logger.With("token", key).InfoContext(ctx, "pushing with "+key, "err", errors.New("auth failed for "+key), slog.Group("g", "k", key), "args", []string{key},
		"raw", json.RawMessage(`{"t":"`+key+`"}`), "bytes", []byte(key), "struct", struct{ T string }{key})
	require.NotContains(t, out.String(), key[4:])
	require.Contains(t, out.String(), `"request_id":"req-1"`)
	require.Same(t, logger, Logger(logger), "redacted once")
}

func TestRequestIDs(t *testing.T) {
	m := New(Options{})
	var seen string
	h := m.HTTP(slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RequestID(r.Context()) }))
	for given, keep := range map[string]bool{"abc-123": true, "": false, "has space": false, strings.Repeat("a", 65): false} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if given != "" {
			r.Header.Set(RequestHeader, given)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, seen, w.Header().Get(RequestHeader))
		require.Equal(t, keep, seen == given, given)
		require.NotEmpty(t, seen)
	}
}

// TestDashboardAndAlertsNameMetricsThatExist reads deploy/'s Grafana
// dashboard and Prometheus rules: every paddock_ metric their queries
// name is one a node serves, and promtool (Prometheus's own checker)
// accepts the rules.
func TestDashboardAndAlertsNameMetricsThatExist(t *testing.T) {
	have := names(t, exercised(t))
	metric := regexp.MustCompile(`\bpaddock_[a-z_]+\b`)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct{ List []struct{ Query any } }
	}
	data, err := os.ReadFile("../../deploy/grafana/paddock.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Panels)
	var exprs []string
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			exprs = append(exprs, q)
		}
	}
	rules, err := os.ReadFile("../../deploy/prometheus/alerts.yaml")
	require.NoError(t, err)
	exprs = append(exprs, string(rules))
	named := 0
	for _, e := range exprs {
		for _, name := range metric.FindAllString(e, -1) {
			named++
			require.True(t, have[name], "%s names %s, which no node serves", e, name)
		}
	}
	require.Greater(t, named, 20)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus; .ci/run does): the rules' syntax is not checked")
	}
	out, err := exec.Command(promtool, "check", "rules", "../../deploy/prometheus/alerts.yaml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS")
}

// gateCount is the gate's decisions on tool.
func gateCount(t *testing.T, m *Metrics, tool string) float64 {
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != "paddock_tool_calls_total" {
			continue
		}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == "tool" && l.GetValue() == tool {
					total += s.Counter.GetValue()
				}
			}
		}
	}
	return total
}

// BenchmarkRequest is what the telemetry adds to one API request: its
// ID, span (no exporter), counters and access-log line through the
// redacting JSON logger, against the bare handler.
func BenchmarkRequest(b *testing.B) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux := http.NewServeMux()
	mux.Handle("GET /v1/sessions/{id}", handler)
	for name, h := range map[string]http.Handler{
		"bare":     mux,
		"observed": New(Options{}).HTTP(Logger(slog.New(slog.NewJSONHandler(io.Discard, nil))), mux),
	} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/sessions/01JABCDEF", nil))
			}
		})
	}
}

// TestModelLabelsAreCapped: a session may name any model; past the
// first maxModels a node has seen, the rest count as other.
func TestModelLabelsAreCapped(t *testing.T) {
	m := New(Options{})
	f := m.Factory("openai", func(string) (provider.Provider, error) { return failing{}, nil })
	for i := range maxModels + 50 {
		p, err := f(fmt.Sprintf("made-up-%d", i))
		require.NoError(t, err)
		_, _ = p.Stream(context.Background(), provider.Request{}, func(provider.Delta) {})
	}
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, fam := range families {
		if fam.GetName() == "paddock_model_calls_total" {
			require.Len(t, fam.Metric, maxModels+1, "the first %d and other", maxModels)
		}
	}
}

// TestRequestsAreTracesOfTheirOwn: a caller's traceparent is linked, not
// continued (it could name a turn's trace); a long path is clipped.
func TestRequestsAreTracesOfTheirOwn(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	m := New(Options{Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t")})
	var logs bytes.Buffer
	h := m.HTTP(slog.New(slog.NewJSONHandler(&logs, nil)), http.NotFoundHandler())
	r := httptest.NewRequest(http.MethodGet, "/"+strings.Repeat("a", 5000), nil)
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	r.Header.Set("traceparent", "00-"+caller+"-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), r)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	require.NotEqual(t, caller, spans[0].SpanContext().TraceID().String(), "not continued")
	require.False(t, spans[0].Parent().IsValid())
	require.Len(t, spans[0].Links(), 1)
	require.Equal(t, caller, spans[0].Links()[0].SpanContext.TraceID().String(), "linked")
	require.Less(t, logs.Len(), 1000, "the path is clipped in the log")
}

// TestTurnsAreSampledWhole: with a ratio, a turn's root and the spans of
// its work are kept or dropped together.
func TestTurnsAreSampledWhole(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	byID := sdktrace.TraceIDRatioBased(0.5)
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(spans.IDs{}),
		sdktrace.WithSampler(turnSampler{base: sdktrace.ParentBased(byID), byID: byID})).Tracer("t")
	for i := range 200 {
		turn := fmt.Sprintf("turn-%d", i)
		ctx, tool := spans.Start(context.Background(), tracer, turn, "execute_tool")
		_, command := tracer.Start(ctx, "command")
		command.End()
		tool.End()
		spans.Root(context.Background(), tracer, turn, "turn", time.Now().Add(-time.Second), time.Now())
	}
	kept := map[string]map[string]bool{}
	for _, s := range rec.Ended() {
		id := s.SpanContext().TraceID().String()
		if kept[id] == nil {
			kept[id] = map[string]bool{}
		}
		kept[id][s.Name()] = true
	}
	require.Greater(t, len(kept), 50, "about half the turns")
	require.Less(t, len(kept), 150)
	for id, names := range kept {
		require.Equal(t, map[string]bool{"turn": true, "execute_tool": true, "command": true}, names, "trace %s is whole", id)
	}
}
