package agency

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/tool"
)

// effective is what a spec's Tools give at the gate (Gate and offered use
// Tools.Only(sp.Tools): an empty list is every built-in tool).
func effective(all tool.Set, names []string) []string { return all.Only(names).Names() }

// TestAttackNarrowedNeverEmpty: an empty tool list means every tool, so
// a delegating session with nothing to give (only delegate at the last
// depth, or only tools its policy excludes), or a delegation naming only
// MCP tools, is refused rather than handed a list that grows into all.
func TestAttackNarrowedNeverEmpty(t *testing.T) {
	all := tool.Builtin()
	excluded := &policy.Policy{Default: policy.AllowedWithoutPermission, Tools: map[string]policy.Value{"read_file": policy.Disabled}}
	for _, c := range []struct {
		name   string
		parent spec.Agent
		floor  *policy.Policy
		d      tool.Delegation
		again  bool
	}{
		{"only delegate, at the last depth", spec.Agent{Name: "reviewer", Model: "replay/demo", Tools: []string{"delegate"}}, policy.Default(), tool.Delegation{Task: "x"}, false},
		{"only a tool its policy excludes", spec.Agent{Name: "r", Model: "replay/demo", Tools: []string{"read_file"}}, excluded, tool.Delegation{Task: "x"}, true},
		{"only MCP tools asked", spec.Agent{Name: "w", Model: "replay/demo", Tools: []string{"write_file"}, MCPServers: []spec.MCPServerSpec{{Name: "calc", URL: "http://x"}}},
			policy.Default(), tool.Delegation{Tools: []string{"mcp__calc__add"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := narrowed(c.parent, c.floor, all, c.d, c.again)
			if !errors.Is(err, errdefs.ErrInvalid) {
				have := effective(all, c.parent.Tools)
				t.Fatalf("err %v: the delegated session gets %v from a session with %v", err, effective(all, got.Tools), have)
			}
		})
	}
}

// attackStore is a real (SQLite) store.
func attackStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "paddock.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func attackSession(t *testing.T, st store.Store, by session.Sender, sp spec.Agent, spend float64) session.Session {
	t.Helper()
	id := uuid.NewString()
	x, _, err := st.CreateSession(context.Background(), store.NewSession{ID: id, Project: "default", CreatedBy: by, SpendCapUSD: spend,
		Agent: spec.Record{Project: "default", Name: sp.Name, Spec: sp.JSON(), Digest: sp.Digest()}, Input: "task",
		StartKind: session.KindStartWithMessage, StartPayload: json.RawMessage(`{"message":"task"}`), Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestAttackCarveForgetsEndedUncollectedChild: a step's delegations are
// collected (their consumption charged to the parent) only after every
// call of the step has run. A first child that spent all it was given
// and was stopped for budget before a later delegate call of the same
// step is no longer live, but not yet charged either: carve counts what
// it used, so the second child gets nothing, not the whole budget again.
func TestAttackCarveForgetsEndedUncollectedChild(t *testing.T) {
	ctx := context.Background()
	st := attackStore(t)
	ana := session.Sender{Kind: session.SenderOperator, ID: "ana"}
	psp := spec.Agent{Name: "dev", Model: "replay/demo"}
	psp.Session.MaxActions = 10
	parent := attackSession(t, st, ana, psp, 2.0)

	// The first child, carved all 10 actions and $2 (asked more).
	csp := psp
	csp.Session.MaxActions = 10
	child := attackSession(t, st, session.Sender{Kind: session.SenderAgent, ID: parent.ID, Via: session.ViaDelegate + "turn1/call_1", OnBehalfOf: &ana}, csp, 2.0)
	if p, _ := child.Delegated(); p != parent.ID {
		t.Fatalf("not a delegated child: %+v", child.CreatedBy)
	}
	// It spends everything...
	data, _ := json.Marshal(session.BudgetData{Actions: 10, SpendUSD: 2.0})
	if _, err := st.AppendEvent(ctx, session.Event{SessionID: child.ID, Kind: session.EventBudget, Key: durable.BudgetPrefix + "call/x", Data: data}); err != nil {
		t.Fatal(err)
	}
	p := peers{s: &Service{Store: st, Defaults: bound.Limits{Actions: bound.DefaultActions, Active: bound.DefaultActive}, Now: time.Now}, from: parent}

	// While it is live, nothing is left: correct.
	if _, err := p.carve(ctx, psp, &tool.Budget{Actions: 1000, SpendUSD: 100}, "turn1/call_2"); !errors.Is(err, bound.ErrNothingLeft) {
		t.Fatalf("with a live child holding all: err %v, want nothing left", err)
	}
	// ...and is stopped for its budget; the parent's call has not collected it yet.
	if err := st.StopSession(ctx, child.ID, session.StopPayload{Reason: session.StopBudget + ": used 10 of 10 actions"}); err != nil {
		t.Fatal(err)
	}
	l, err := p.carve(ctx, psp, &tool.Budget{Actions: 1000, SpendUSD: 100}, "turn1/call_2")
	if err == nil {
		t.Errorf("a second child is carved %d actions and $%.2f although the first already spent all 10 actions and $2 of the parent's: "+
			"the parent's tree spends %d actions and $%.2f of 10 and $2", l.Actions, l.SpendUSD, 10+l.Actions, 2+l.SpendUSD)
	}
}

// TestAttackSpawnResetsDepth: a delegated session (here at the last
// depth) has no sessions_spawn, and one that calls it anyway is refused:
// a session it spawned would start at depth 0, with the agent's own
// budget and policy, neither a carve of its delegating session's nor its
// floor.
func TestAttackSpawnResetsDepth(t *testing.T) {
	ctx := context.Background()
	st := attackStore(t)
	ana := session.Sender{Kind: session.SenderOperator, ID: "ana"}
	sp := spec.Agent{Name: "dev", Model: "replay/demo"}
	root := attackSession(t, st, ana, sp, 0)
	child := attackSession(t, st, session.Sender{Kind: session.SenderAgent, ID: root.ID, Via: session.ViaDelegate + "c1", OnBehalfOf: &ana}, sp, 0)
	grand := attackSession(t, st, session.Sender{Kind: session.SenderAgent, ID: child.ID, Via: session.ViaDelegate + "c2", OnBehalfOf: &ana}, sp, 0)
	svc := &Service{Store: st, Tools: tool.Builtin(), Now: time.Now}
	if d, err := (peers{s: svc, from: grand}).depth(ctx); err != nil || d != MaxDelegationDepth {
		t.Fatalf("grandchild depth %d (%v)", d, err)
	}
	got, err := narrowed(sp, policy.Default(), svc.Tools, tool.Delegation{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(effective(svc.Tools, got.Tools), tool.SessionsSpawn) {
		t.Errorf("a delegated session keeps %s (a way out of its tree)", tool.SessionsSpawn)
	}
	for _, from := range []session.Session{child, grand} {
		if _, err := (peers{s: svc, from: from}).Spawn(ctx, "dev", "go", "turn/call"); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("a delegated session spawns: %v", err)
		}
	}
}
