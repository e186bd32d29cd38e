package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spans"
	"github.com/paddock-dev/paddock/internal/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Store counts approvals decided (each is decided once) and model spend
// as they are written, and times the store's busiest operations. The
// transcript's events are counted by Event, which the store tells of each
// one it commits: a write the store found already made (a retried
// activity's, by its idempotency key) is not counted again.
type Store struct {
	store.Store
	M *Metrics
}

func (s Store) timed(op string, started time.Time) {
	s.M.storeSeconds.WithLabelValues(op).Observe(time.Since(started).Seconds())
}

func (s Store) DecideApproval(ctx context.Context, id string, st session.ApprovalStatus, by *session.Sender, note string) (session.Approval, error) {
	started := time.Now()
	out, err := s.Store.DecideApproval(ctx, id, st, by, note)
	s.timed("decide_approval", started)
	if err == nil && out.DecidedAt != nil {
		// The wait is a span of its turn's trace, from the ask to the word.
		_, span := spans.Start(ctx, s.M.tracer, out.TurnID, "approval "+s.M.toolLabel(out.Tool), trace.WithTimestamp(out.CreatedAt))
		span.SetAttributes(attribute.String("paddock.approval.outcome", string(out.Status)), attribute.String("gen_ai.tool.name", s.M.toolLabel(out.Tool)))
		span.End(trace.WithTimestamp(*out.DecidedAt))
		s.M.approvals.WithLabelValues(string(out.Status)).Inc()
		s.M.decision.WithLabelValues(string(out.Status)).Observe(out.DecidedAt.Sub(out.CreatedAt).Seconds())
	}
	return out, err
}

func (s Store) RecordUsage(ctx context.Context, sessionID, turnID string, step int, model string, u session.Usage) error {
	started := time.Now()
	err := s.Store.RecordUsage(ctx, sessionID, turnID, step, model, u)
	s.timed("record_usage", started)
	if err == nil && u.CostUSD > 0 {
		provider, name, _ := strings.Cut(model, "/")
		s.M.cost.WithLabelValues(label(provider), s.M.models.of(name)).Add(u.CostUSD)
	}
	return err
}

func (s Store) ClaimBatch(ctx context.Context, sessionID string) ([]session.Command, error) {
	defer s.timed("claim_batch", time.Now())
	return s.Store.ClaimBatch(ctx, sessionID)
}

func (s Store) AppendCommand(ctx context.Context, c store.NewCommand) (session.Command, bool, error) {
	defer s.timed("append_command", time.Now())
	return s.Store.AppendCommand(ctx, c)
}

// Event counts one transcript event newly written: by kind, as an audit
// entry, and what it says of turns, the gate's decisions, tool calls'
// ends, parks, extensions, egress and provisioning phases.
func (m *Metrics) Event(e session.Event) {
	m.events.WithLabelValues(string(e.Kind)).Inc()
	m.auditEntries.Inc()
	switch e.Kind {
	case session.EventTurn:
		var d session.TurnData
		if json.Unmarshal(e.Data, &d) == nil && d.Status != "" {
			m.turns.WithLabelValues(string(d.Status)).Inc()
			if d.Status == session.TurnCompleted || d.Status == session.TurnFailed || d.Status == session.TurnStale {
				m.turnRoot(e, d)
			}
		}
	case session.EventToolCall:
		var d session.ToolCallData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		name := m.toolLabel(d.Name)
		// The gate decides once: asking, refusing, or letting a call
		// through unasked. A call a person approved or rejected after
		// being asked was counted when it was asked.
		// A person's rejection carries no verdict; the gate's refusal does.
		byGate := d.By == nil || d.By.Kind == session.ByAutomation
		verdict := map[session.ToolCallState]string{session.CallAwaitingApproval: "ask", session.CallCalling: "allow", session.CallRejected: "refuse"}[d.State]
		if d.State == session.CallAwaitingApproval {
			m.approvals.WithLabelValues("asked").Inc()
		}
		if d.State == session.CallAwaitingApproval || d.State == session.CallCalling && byGate || d.State == session.CallRejected && d.Verdict != "" {
			if d.Verdict != "" {
				verdict = label(d.Verdict)
			}
			rule := d.Rule
			if rule == "" && d.By != nil {
				rule = d.By.Rule
			}
			m.gate.WithLabelValues(name, verdict, RuleFamily(rule)).Inc()
		}
		if d.State.Final() {
			m.outcomes.WithLabelValues(name, string(d.State)).Inc()
		}
	case session.EventPark:
		var d session.ParkData
		if json.Unmarshal(e.Data, &d) == nil && d.Park.ResolvedAt == nil && d.Park.Reason != "" {
			m.parks.WithLabelValues(label(d.Park.Reason)).Inc()
		}
	case session.EventBudget:
		var d session.BudgetData
		if json.Unmarshal(e.Data, &d) == nil && d.Extension {
			m.extensions.Inc()
		}
	case session.EventNetwork:
		var d session.NetworkData
		if json.Unmarshal(e.Data, &d) == nil {
			allowed := "false"
			if d.Allowed {
				allowed = "true"
			}
			m.egress.WithLabelValues(label(d.Phase), allowed).Inc()
			m.egressBytes.WithLabelValues("up").Add(float64(max(d.BytesUp, 0)))
			m.egressBytes.WithLabelValues("down").Add(float64(max(d.BytesDown, 0)))
		}
	case session.EventPhase:
		var d session.PhaseData
		if json.Unmarshal(e.Data, &d) == nil && d.Phase != "" {
			m.phases.WithLabelValues(string(d.Phase)).Observe(float64(d.DurationMs) / 1000)
		}
	}
}

// toolLabel is a tool's name as a label (tool.Set.Label).
func (m *Metrics) toolLabel(name string) string { return m.tools.Label(name) }

// maxModels bounds the models counted by name: a session may name any
// model, so past the first 64 a node has seen, the rest count as "other".
const maxModels = 64

// capped is a label's values, the first max of them kept.
type capped struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

// of is v as a label: itself while there is room, else "other".
func (c *capped) of(v string) string {
	v = label(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[v] {
		return v
	}
	if len(c.seen) >= c.max {
		return "other"
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[v] = true
	return v
}

// RuleFamily is the family of a policy rule, as a bounded label: what
// comes before its first ':' (floor:..., command:...), else before its
// first '.' or '=' (tools.write_file, default=ask).
func RuleFamily(rule string) string {
	if rule == "" {
		return "none"
	}
	if i := strings.IndexByte(rule, ':'); i > 0 {
		return label(rule[:i])
	}
	if i := strings.IndexAny(rule, ".="); i > 0 {
		return label(rule[:i])
	}
	return label(rule)
}

// label bounds the length and letters of a value people or models chose:
// 48 characters of [A-Za-z0-9_.-/], else "other" (how many values there
// are is bounded by the caller: capped).
func label(v string) string {
	if !identifier(v, 48, "_.-/") {
		return "other"
	}
	return v
}

// identifier says v is 1 to max letters, digits or punctuation of extra.
func identifier(v string, max int, extra string) bool {
	if v == "" || len(v) > max {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r)) {
			return false
		}
	}
	return true
}

// turnRoot writes an ended turn's root span, from its start to its end.
func (m *Metrics) turnRoot(e session.Event, d session.TurnData) {
	if m.turnReader == nil || e.TurnID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := m.turnReader.GetTurn(ctx, e.TurnID)
	if err != nil {
		return
	}
	spans.Root(ctx, m.tracer, e.TurnID, "turn", t.CreatedAt, e.CreatedAt, attribute.String("paddock.session_id", e.SessionID),
		attribute.String("paddock.turn_id", e.TurnID), attribute.String("paddock.turn.status", string(d.Status)))
}
