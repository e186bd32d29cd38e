package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/terminal"
	"github.com/paddock-dev/paddock/internal/wire"
)

// syncBuffer is a log destination several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// scrape reads a node's metrics as Prometheus does, with its token.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value is the sum of a family's samples whose labels include want
// (a histogram's: its count).
func value(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// TestMetricsFollowASession scrapes a node's /metrics (on its own
// listener, behind its token) while a gated session runs, and checks the
// counters moved as the session did: two commands refused, one allowed
// unasked, one asked and approved; the commands that ran; the model's
// calls with their tokens; the turn; the API's requests by route. The
// access log is JSON with the request's ID.
func TestMetricsFollowASession(t *testing.T) {
	ctx := context.Background()
	dir := dataDir(t)
	var logs syncBuffer
	const token = "metrics-token-of-the-test-0123456789"
	a, err := app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "tester", LogLevel: slog.LevelInfo,
		MetricsListen: "127.0.0.1:0", MetricsExplicit: true, MetricsToken: token}, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(a.Stop)
	require.NotEmpty(t, a.MetricsURL)
	c := client.New(a.URL).WithToken(readToken(dir))

	resp, err := http.Get(a.MetricsURL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token, no metrics")
	require.Contains(t, string(body), "PADDOCK_METRICS_TOKEN")

	before := scrape(t, a.MetricsURL, token)
	_, err = c.Projects().SetPolicy(ctx, "default", []byte("default: ask\ncommands:\n  allow: [ls]\ncontinueAfterToolRejection: true\n"))
	require.NoError(t, err)
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Model: scriptIn(t, dir, "gated.yaml"), Message: "go", Repo: gitRepo(t)})
	require.NoError(t, err)
	var pending []session.Approval
	waitFor(t, "the approval request", func() (bool, error) {
		pending, err = c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
		return len(pending) == 1, err
	})
	// The census is taken at most every 5 s: scrapes in between see the last.
	census := func(what, name string, labels map[string]string, want float64) {
		waitFor(t, what, func() (bool, error) { return value(scrape(t, a.MetricsURL, token), name, labels) == want, nil })
	}
	census("the approval counted as waiting", "paddock_approvals_waiting", nil, 1)
	require.Positive(t, value(scrape(t, a.MetricsURL, token), "paddock_approval_oldest_waiting_seconds", nil))
	_, err = c.Gates().Decide(ctx, pending[0].ID, true, "fine")
	require.NoError(t, err)
	waitFor(t, "the turn to complete", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnCompleted, err
	})

	after := scrape(t, a.MetricsURL, token)
	moved := func(name string, labels map[string]string) float64 {
		return value(after, name, labels) - value(before, name, labels)
	}
	run := map[string]string{"tool": "run_command"}
	require.Equal(t, 2.0, moved("paddock_tool_calls_total", map[string]string{"tool": "run_command", "verdict": "refuse", "rule_family": "command"}), "sudo id and rm -rf /")
	require.Equal(t, 1.0, moved("paddock_tool_calls_total", map[string]string{"tool": "run_command", "verdict": "allow", "rule_family": "commands"}), "ls")
	require.Equal(t, 1.0, moved("paddock_tool_calls_total", map[string]string{"tool": "run_command", "verdict": "ask"}), "the echo")
	require.Equal(t, 4.0, moved("paddock_tool_calls_total", run), "no call counted twice")
	require.Equal(t, 2.0, moved("paddock_tool_call_outcomes_total", map[string]string{"tool": "run_command", "outcome": "done"}))
	require.Equal(t, 2.0, moved("paddock_tool_call_outcomes_total", map[string]string{"tool": "run_command", "outcome": "rejected"}))
	require.Equal(t, 1.0, moved("paddock_approvals_total", map[string]string{"outcome": "asked"}))
	require.Equal(t, 1.0, moved("paddock_approvals_total", map[string]string{"outcome": "approved"}))
	require.Equal(t, 1.0, moved("paddock_approval_decision_seconds", map[string]string{"outcome": "approved"}))
	require.Equal(t, 2.0, moved("paddock_commands_total", map[string]string{"outcome": "ok"}), "ls and the echo ran")
	require.Equal(t, 2.0, moved("paddock_command_seconds", nil))
	require.Greater(t, moved("paddock_command_cpu_seconds_total", nil), 0.0)
	require.Equal(t, 2.0, moved("paddock_model_calls_total", map[string]string{"provider": "replay", "model": "gated.yaml", "outcome": "ok"}))
	require.Greater(t, moved("paddock_model_tokens_total", map[string]string{"provider": "replay", "direction": "input"}), 0.0)
	require.Greater(t, moved("paddock_model_tokens_total", map[string]string{"provider": "replay", "direction": "output"}), 0.0)
	require.Equal(t, 1.0, moved("paddock_turns_total", map[string]string{"status": "completed"}))
	require.Greater(t, moved("paddock_audit_entries_total", nil), 10.0)
	census("no approval waiting", "paddock_approvals_waiting", nil, 0)
	census("the session awaiting", "paddock_sessions", map[string]string{"status": "awaiting"}, 1)
	census("one node", "paddock_cluster_nodes", nil, 1)
	require.GreaterOrEqual(t, moved("paddock_http_requests_total", map[string]string{"route": "POST /v1/sessions", "code": "2xx"}), 1.0)
	require.Greater(t, value(after, "paddock_store_seconds", map[string]string{"op": "claim_batch"}), 0.0)
	require.Greater(t, value(after, "paddock_temporal_task_seconds", map[string]string{"kind": "workflow"}), 0.0)
	require.Contains(t, after, "go_goroutines", "the runtime's own")
	for name, f := range after {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				require.NotContains(t, l.GetValue(), x.ID, "%s: no session ID as a label", name)
			}
		}
	}

	// paddock status says the same, to the server's administrators.
	st, err := c.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Nodes)
	require.Equal(t, 1, st.Sessions[session.StatusAwaiting])
	require.Zero(t, st.ApprovalsWaiting)
	require.GreaterOrEqual(t, st.QueueLagMs, int64(0), "tasks ran")
	require.Positive(t, st.Disk.FreeBytes)
	require.Equal(t, dir, st.Disk.Path)
	var shown bytes.Buffer
	terminal.Status(&shown, st)
	require.Contains(t, shown.String(), "sessions   1 awaiting (not archived)")
	require.Contains(t, shown.String(), "approvals  0 approvals waiting")

	// The profiles are on the same listener, behind the same token.
	req, err := http.NewRequest(http.MethodGet, a.MetricsURL+"/debug/pprof/goroutine?debug=1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "goroutine profile")

	// The access log: one JSON object per request, with its route and ID.
	var found bool
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "every log line is JSON: %s", line)
		if rec["msg"] == "request" && rec["route"] == "POST /v1/sessions" {
			found = true
			require.Equal(t, float64(http.StatusCreated), rec["status"])
			require.NotEmpty(t, rec["request_id"])
		}
	}
	require.True(t, found, "the session's creation is in the access log")
}

// TestStatusIsForAdministrators: a project's member may not read the
// server's health.
func TestStatusIsForAdministrators(t *testing.T) {
	user := unique("status-member")
	member(t, unique("status"), user, identity.Admin)
	_, c := tokenOf(t, user)
	_, err := c.Status(context.Background())
	require.Equal(t, http.StatusForbidden, apiStatus(t, err))
	st, err := api.Status(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, st.Node)
}
