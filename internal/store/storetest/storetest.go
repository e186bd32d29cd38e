// Package storetest is the one test suite every store backend passes.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
)

// Run runs the suite; open returns a fresh, empty store for each test.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := map[string]func(t *testing.T, s store.Store){
		"ApplyAgents":           testApplyAgents,
		"CreateSessionAndStart": testCreateSession,
		"IdempotentCreate":      testIdempotentCreate,
		"SingletonSlot":         testSingletonSlot,
		"CommandsIdempotent":    testCommandsIdempotent,
		"TerminalRejects":       testTerminalRejects,
		"ArchiveRevive":         testArchiveRevive,
		"ClaimBatch":            testClaimBatch,
		"ClaimResumesOpenTurn":  testClaimResumesOpenTurn,
		"TurnDerivesStatus":     testTurnDerivesStatus,
		"StopWins":              testStopWins,
		"EventsIdempotent":      testEventsIdempotent,
		"ListSessions":          testListSessions,
		"Approvals":             testApprovals,
		"ProjectPolicy":         testProjectPolicy,
		"ServerSecret":          testServerSecret,
		"Checkpoints":           testCheckpoints,
		"Delivery":              testDelivery,
		"Usage":                 testUsage,
		"Parks":                 testParks,
		"Deliveries":            testDeliveries,
		"Unfinished":            testUnfinished,
		"RepairAndHold":         testRepairAndHold,
		"Connections":           testConnections,
		"ForgeLinks":            testForgeLinks,
		"Census":                testCensus,
		"Chats":                 testChats,
		"Attachments":           testAttachments,
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

var ctx = context.Background()

func agent(name string, concurrency int) spec.Record {
	return spec.Record{Project: "default", Name: name, Spec: json.RawMessage(`{"name":"` + name + `"}`), Digest: "d1", Concurrency: concurrency}
}

var operator = session.Sender{Kind: session.SenderOperator, ID: "ana"}

func newSession(t *testing.T, s store.Store, id string, a spec.Record) session.Session {
	t.Helper()
	x, created, err := s.CreateSession(ctx, store.NewSession{
		ID: id, Project: "default", Agent: a, SpendCapUSD: 2.5, DisplayTitle: "title " + id, Input: "do it",
		CreatedBy: operator, StartKind: session.KindStartWithMessage, StartPayload: json.RawMessage(`{"message":"do it"}`),
	})
	require.NoError(t, err)
	require.True(t, created)
	return x
}

func msg(t *testing.T, s store.Store, sessionID, key string) session.Command {
	t.Helper()
	c, _, err := s.AppendCommand(ctx, store.NewCommand{ID: sessionID + "-" + key, SessionID: sessionID, Kind: session.KindMessage,
		Payload: json.RawMessage(`{"message":"` + key + `"}`), Sender: operator, IdempotencyKey: key})
	require.NoError(t, err)
	return c
}

func testApplyAgents(t *testing.T, s store.Store) {
	res, err := s.ApplyAgents(ctx, []spec.Record{agent("a", 0), agent("b", 1)})
	require.NoError(t, err)
	require.Equal(t, []spec.ApplyResult{spec.Created, spec.Created}, res)
	changed := agent("a", 0)
	changed.Digest, changed.Spec = "d2", json.RawMessage(`{"name":"a","v":2}`)
	res, err = s.ApplyAgents(ctx, []spec.Record{changed, agent("b", 1)})
	require.NoError(t, err)
	require.Equal(t, []spec.ApplyResult{spec.Configured, spec.Unchanged}, res)
	got, err := s.GetAgent(ctx, "default", "a")
	require.NoError(t, err)
	require.Equal(t, "d2", got.Digest)
	require.JSONEq(t, `{"name":"a","v":2}`, string(got.Spec))
	list, err := s.ListAgents(ctx, "default")
	require.NoError(t, err)
	require.Len(t, list, 2)
	_, err = s.GetAgent(ctx, "default", "zzz")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
}

func testCreateSession(t *testing.T, s store.Store) {
	a := agent("a", 0)
	x := newSession(t, s, "s1", a)
	require.Equal(t, session.StatusQueued, x.Status)
	require.Equal(t, 2.5, x.SpendCapUSD)
	require.JSONEq(t, string(a.Spec), string(x.AgentSpec))
	require.Equal(t, operator, x.CreatedBy)
	cmds, err := s.ListCommands(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, cmds, 1)
	require.Equal(t, session.KindStartWithMessage, cmds[0].Kind)
	require.Equal(t, session.SenderSystem, cmds[0].Sender.Kind)
	// A later apply changes only future sessions.
	a.Spec, a.Digest = json.RawMessage(`{"name":"a","changed":true}`), "d9"
	_, err = s.ApplyAgents(ctx, []spec.Record{a})
	require.NoError(t, err)
	got, err := s.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"a"}`, string(got.AgentSpec))
	_, err = s.GetSession(ctx, "nope")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
}

func testIdempotentCreate(t *testing.T, s store.Store) {
	in := store.NewSession{ID: "r1", Project: "default", Agent: agent("a", 0), CreatedBy: operator,
		StartKind: session.KindStart, IdempotencyKey: "retry:s0"}
	x, created, err := s.CreateSession(ctx, in)
	require.NoError(t, err)
	require.True(t, created)
	in.ID = "r2"
	y, created, err := s.CreateSession(ctx, in)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, x.ID, y.ID)
}

func testSingletonSlot(t *testing.T, s store.Store) {
	a := agent("single", 1)
	newSession(t, s, "one", a)
	_, _, err := s.CreateSession(ctx, store.NewSession{ID: "two", Project: "default", Agent: a, CreatedBy: operator, StartKind: session.KindStart})
	var slot *errdefs.SlotConflictError
	require.ErrorAs(t, err, &slot)
	require.Equal(t, "one", slot.SessionID)
	require.ErrorIs(t, err, errdefs.ErrConflict)
	_, err = s.GetSession(ctx, "two")
	require.ErrorIs(t, err, errdefs.ErrNotFound, "nothing half-written")
	require.NoError(t, s.StopSession(ctx, "one", session.StopPayload{Reason: "done"}))
	newSession(t, s, "three", a)
}

func testCommandsIdempotent(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	c1 := msg(t, s, "s", "k1")
	c2, created, err := s.AppendCommand(ctx, store.NewCommand{ID: "other", SessionID: "s", Kind: session.KindMessage,
		Payload: json.RawMessage(`{"message":"x"}`), Sender: operator, IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, c1.ID, c2.ID)
	// Concurrent senders with distinct keys get distinct, gapless seqs.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.AppendCommand(ctx, store.NewCommand{ID: fmt.Sprintf("c%d", i), SessionID: "s", Kind: session.KindMessage,
				Payload: json.RawMessage(`{"message":"x"}`), Sender: operator, IdempotencyKey: fmt.Sprintf("c%d", i)})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	cmds, err := s.ListCommands(ctx, "s")
	require.NoError(t, err)
	require.Len(t, cmds, 22)
	for i, c := range cmds {
		require.Equal(t, int64(i+1), c.Seq)
	}
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "x", SessionID: "missing", Kind: session.KindMessage, Sender: operator})
	require.ErrorIs(t, err, errdefs.ErrNotFound)
}

func testTerminalRejects(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	require.NoError(t, s.FailSession(ctx, "s", "boom\ndetail"))
	x, err := s.GetSession(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, session.StatusFailed, x.Status)
	require.Equal(t, "boom", x.FailureReason)
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "m", SessionID: "s", Kind: session.KindMessage, Sender: operator})
	var term *errdefs.TerminalError
	require.ErrorAs(t, err, &term)
	require.ErrorIs(t, err, errdefs.ErrConflict)
	cmds, err := s.ListCommands(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, session.CommandCanceled, cmds[0].State, "the never-dispatched start settles canceled")
}

func testArchiveRevive(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	require.NoError(t, s.Archive(ctx, "s", operator, "what I learned"))
	x, _ := s.GetSession(ctx, "s")
	require.NotNil(t, x.ArchivedAt)
	require.Equal(t, "what I learned", x.Handoff)
	list, err := s.ListSessions(ctx, session.Filter{Project: "default"})
	require.NoError(t, err)
	require.Empty(t, list)
	// interrupt brings no work: still archived.
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "i", SessionID: "s", Kind: session.KindInterrupt, Sender: operator})
	require.NoError(t, err)
	x, _ = s.GetSession(ctx, "s")
	require.NotNil(t, x.ArchivedAt)
	msg(t, s, "s", "wake")
	x, _ = s.GetSession(ctx, "s")
	require.Nil(t, x.ArchivedAt)
}

func testClaimBatch(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	first, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Equal(t, session.KindStartWithMessage, first[0].Kind)
	// A crash before settling: the same claim comes back.
	again, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, first[0].ID, again[0].ID)
	_, err = s.OpenTurn(ctx, "t1", "s", []string{first[0].ID})
	require.NoError(t, err)
	for i := range 40 {
		msg(t, s, "s", fmt.Sprintf("m%02d", i))
	}
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "pause", SessionID: "s", Kind: session.KindPause, Sender: operator})
	require.NoError(t, err)
	// A crash after the turn opened, before its workflow recorded it:
	// the open turn's commands come back, and the turn resumes.
	b, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, ids(first), ids(b))
	require.Equal(t, session.CommandAccepted, b[0].State)
	require.NoError(t, s.SetTurnStatus(ctx, "t1", session.TurnCompleted, "", ""))
	b, err = s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Len(t, b, session.MaxBatch)
	require.Equal(t, "s-m00", b[0].ID)
	require.NoError(t, s.SettleCommands(ctx, ids(b), session.CommandAccepted, ""))
	b, err = s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Len(t, b, 8)
	require.NoError(t, s.SettleCommands(ctx, ids(b), session.CommandAccepted, ""))
	b, err = s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Empty(t, b, "pause is persisted, never dispatched")
	c, err := s.GetCommand(ctx, "pause")
	require.NoError(t, err)
	require.Equal(t, session.CommandPending, c.State)
}

// testClaimResumesOpenTurn: the session's last turn left open (a claim
// whose workflow task a crash lost opened it) is claimed again, not an
// older one; a hold freezes it; a stop or an interrupt waiting ends it.
func testClaimResumesOpenTurn(t *testing.T, s store.Store) {
	open := func(id string) {
		t.Helper()
		newSession(t, s, id, agent("a", 0))
		b, err := s.ClaimBatch(ctx, id)
		require.NoError(t, err)
		_, err = s.OpenTurn(ctx, "t-"+id, id, ids(b))
		require.NoError(t, err)
	}
	turn := func(id string) session.Turn {
		t.Helper()
		turn, err := s.GetTurn(ctx, "t-"+id)
		require.NoError(t, err)
		return turn
	}

	open("latest")
	require.NoError(t, s.SetTurnStatus(ctx, "t-latest", session.TurnInProgress, "", ""))
	b, err := s.ClaimBatch(ctx, "latest")
	require.NoError(t, err)
	require.Equal(t, []string{"latest-start"}, ids(b), "the open turn's command, to resume")
	// An older turn a crash left open is not run again after later ones.
	m := msg(t, s, "latest", "next")
	b, err = s.ClaimBatch(ctx, "latest")
	require.NoError(t, err)
	require.Equal(t, []string{"latest-start"}, ids(b), "the open turn first")
	_, err = s.OpenTurn(ctx, "t2", "latest", []string{m.ID})
	require.NoError(t, err)
	require.NoError(t, s.SetTurnStatus(ctx, "t2", session.TurnCompleted, "", ""))
	b, err = s.ClaimBatch(ctx, "latest")
	require.NoError(t, err)
	require.Empty(t, b, "turn t-latest is not the last turn")

	open("held")
	require.NoError(t, s.SetHold(ctx, "held", &session.Hold{By: operator, Reason: "incident", At: time.Now()}))
	b, err = s.ClaimBatch(ctx, "held")
	require.NoError(t, err)
	require.Empty(t, b, "a hold freezes the open turn")

	open("stopped")
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "stop", SessionID: "stopped", Kind: session.KindStop, Sender: operator})
	require.NoError(t, err)
	b, err = s.ClaimBatch(ctx, "stopped")
	require.NoError(t, err)
	require.Equal(t, []string{"stop"}, ids(b), "a waiting stop wins over the open turn")
	require.Equal(t, session.TurnFailed, turn("stopped").Status)
	require.Contains(t, turn("stopped").Error, "interrupted (command stop)")

	open("cut")
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "cut-it", SessionID: "cut", Kind: session.KindInterrupt, Sender: operator})
	require.NoError(t, err)
	after := msg(t, s, "cut", "after")
	b, err = s.ClaimBatch(ctx, "cut")
	require.NoError(t, err)
	require.Equal(t, []string{after.ID}, ids(b), "the interrupt ended the open turn; what came after runs")
	require.Equal(t, session.TurnFailed, turn("cut").Status)
	c, err := s.GetCommand(ctx, "cut-it")
	require.NoError(t, err)
	require.Equal(t, session.CommandAccepted, c.State)
	require.Empty(t, c.Error)
}

func ids(cs []session.Command) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func testTurnDerivesStatus(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	b, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	turn, err := s.OpenTurn(ctx, "t1", "s", ids(b))
	require.NoError(t, err)
	require.Equal(t, session.TurnAccepted, turn.Status)
	again, err := s.OpenTurn(ctx, "t1", "s", ids(b))
	require.NoError(t, err)
	require.Equal(t, turn.Seq, again.Seq)
	x, _ := s.GetSession(ctx, "s")
	require.Equal(t, session.StatusRunning, x.Status)
	c, _ := s.GetCommand(ctx, b[0].ID)
	require.Equal(t, session.CommandAccepted, c.State)
	require.Equal(t, "t1", c.TurnID)
	require.NoError(t, s.SetTurnStatus(ctx, "t1", session.TurnFailed, session.ScopeTurn, "model error"))
	x, _ = s.GetSession(ctx, "s")
	require.Equal(t, session.StatusAwaiting, x.Status)
	msg(t, s, "s", "again")
	b, _ = s.ClaimBatch(ctx, "s")
	_, err = s.OpenTurn(ctx, "t2", "s", ids(b))
	require.NoError(t, err)
	require.NoError(t, s.SetTurnStatus(ctx, "t2", session.TurnFailed, session.ScopeSession, "fatal"))
	x, _ = s.GetSession(ctx, "s")
	require.Equal(t, session.StatusFailed, x.Status)
	require.Equal(t, "fatal", x.Error)
	turns, err := s.ListTurns(ctx, "s")
	require.NoError(t, err)
	require.Len(t, turns, 2)
}

func testStopWins(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	b, _ := s.ClaimBatch(ctx, "s")
	_, err := s.OpenTurn(ctx, "t1", "s", ids(b))
	require.NoError(t, err)
	require.NoError(t, s.StopSession(ctx, "s", session.StopPayload{Reason: "enough", Handoff: "notes"}))
	// The turn settles after the stop: status stays stopped.
	require.NoError(t, s.SetTurnStatus(ctx, "t1", session.TurnCompleted, "", ""))
	require.NoError(t, s.FailSession(ctx, "s", "late failure"))
	require.NoError(t, s.MarkStarted(ctx, "s"))
	x, _ := s.GetSession(ctx, "s")
	require.Equal(t, session.StatusStopped, x.Status)
	require.Equal(t, "enough", x.StopReason)
	require.Equal(t, "notes", x.Handoff)
}

func testEventsIdempotent(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	ch, cancel := s.Subscribe("s")
	defer cancel()
	e1, err := s.AppendEvent(ctx, session.Event{SessionID: "s", Kind: session.EventAssistantText, Key: "k", Data: json.RawMessage(`{"text":"hi"}`)})
	require.NoError(t, err)
	select {
	case <-ch:
	default:
		t.Fatal("subscriber not notified")
	}
	e2, err := s.AppendEvent(ctx, session.Event{SessionID: "s", Kind: session.EventAssistantText, Key: "k", Data: json.RawMessage(`{"text":"other"}`)})
	require.NoError(t, err)
	require.Equal(t, e1.Seq, e2.Seq)
	require.JSONEq(t, `{"text":"hi"}`, string(e2.Data))
	all, err := s.ListEvents(ctx, "s", 0, 0)
	require.NoError(t, err)
	for i, e := range all {
		require.Equal(t, int64(i+1), e.Seq, "gapless")
	}
	tail, err := s.ListEvents(ctx, "s", e1.Seq-1, 0)
	require.NoError(t, err)
	require.Len(t, tail, 1)
	for _, k := range []string{"call/c1/generated", "call/c1/done", "call/c10/done", "question/c1"} {
		_, err := s.AppendEvent(ctx, session.Event{SessionID: "s", Kind: session.EventToolCall, Key: k})
		require.NoError(t, err)
	}
	byKey, err := s.EventsByKey(ctx, "s", "call/c1/")
	require.NoError(t, err)
	require.Len(t, byKey, 2)
	require.Equal(t, "call/c1/generated", byKey[0].Key)
	require.Equal(t, "s", byKey[0].SessionID)
}

func testListSessions(t *testing.T, s store.Store) {
	newSession(t, s, "a1", agent("a", 0))
	newSession(t, s, "b1", agent("b", 0))
	require.NoError(t, s.StopSession(ctx, "b1", session.StopPayload{}))
	all, err := s.ListSessions(ctx, session.Filter{})
	require.NoError(t, err)
	require.Len(t, all, 2)
	byAgent, err := s.ListSessions(ctx, session.Filter{Agent: "a"})
	require.NoError(t, err)
	require.Len(t, byAgent, 1)
	stopped, err := s.ListSessions(ctx, session.Filter{Status: session.StatusStopped})
	require.NoError(t, err)
	require.Len(t, stopped, 1)
	require.Equal(t, "b1", stopped[0].ID)
	if errors.Is(err, errdefs.ErrNotFound) {
		t.Fatal("unexpected")
	}
	live, err := s.ListSessions(ctx, session.Filter{Statuses: []session.Status{session.StatusQueued, session.StatusAwaiting}})
	require.NoError(t, err)
	require.Len(t, live, 1)
	require.Equal(t, "a1", live[0].ID)

	// Pages of 3 through 11 sessions (several created in the same
	// instant) list each once, newest first, whatever the page size.
	for i := range 9 {
		newSession(t, s, fmt.Sprintf("p%d", i), agent("p", 0))
	}
	whole, err := s.ListSessions(ctx, session.Filter{})
	require.NoError(t, err)
	require.Len(t, whole, 11)
	paged, err := store.AllSessions(ctx, s, session.Filter{Limit: 3})
	require.NoError(t, err)
	require.Equal(t, sessionIDs(whole), sessionIDs(paged))
	none, err := s.ListSessions(ctx, session.Filter{Before: "no-such-session"})
	require.NoError(t, err)
	require.Empty(t, none, "an unknown cursor lists nothing")
}

func sessionIDs(list []session.Session) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.ID
	}
	return out
}

func testApprovals(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	in := session.Approval{ID: "ap1", SessionID: "s", TurnID: "t", ToolCallID: "c", Tool: "write_file", Args: json.RawMessage(`{"path":"x"}`),
		Digest: "sha256:x", Rule: "default=ask", Reason: "needs permission", ExpiresAt: time.Now().Add(time.Hour)}
	a, err := s.CreateApproval(ctx, in)
	require.NoError(t, err)
	require.Equal(t, session.ApprovalPending, a.Status)
	again, err := s.CreateApproval(ctx, in)
	require.NoError(t, err)
	require.Equal(t, a.CreatedAt, again.CreatedAt, "idempotent")
	pending, err := s.ListApprovals(ctx, session.ApprovalFilter{Status: session.ApprovalPending})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	d, err := s.DecideApproval(ctx, "ap1", session.ApprovalApproved, &operator, "looks fine")
	require.NoError(t, err)
	require.Equal(t, session.ApprovalApproved, d.Status)
	require.Equal(t, operator, *d.DecidedBy)
	_, err = s.DecideApproval(ctx, "ap1", session.ApprovalRejected, &operator, "")
	require.ErrorIs(t, err, errdefs.ErrConflict, "decided once")
	in.ID, in.ExpiresAt = "ap2", time.Now().Add(-time.Second)
	_, err = s.CreateApproval(ctx, in)
	require.NoError(t, err)
	_, err = s.DecideApproval(ctx, "ap2", session.ApprovalApproved, &operator, "")
	require.ErrorIs(t, err, errdefs.ErrConflict, "a lapsed approval cannot be approved")
	exp, err := s.DecideApproval(ctx, "ap2", session.ApprovalExpired, nil, "ttl")
	require.NoError(t, err)
	require.Equal(t, session.ApprovalExpired, exp.Status)
	_, err = s.GetApproval(ctx, "nope")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
}

func testCheckpoints(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	files := []session.StepFile{{Path: "a.txt", Mode: "100644", Blob: "b1"}, {Path: "gone.txt"}}
	c, created, err := s.SaveStep(ctx, session.Step{SessionID: "s", Base: "base", Tree: "t1", CallID: "c1", Files: files},
		map[string][]byte{"b1": []byte("sealed-1")})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 1, c.Number)
	// The same state again adds nothing.
	c, created, err = s.SaveStep(ctx, session.Step{SessionID: "s", Base: "base", Tree: "t1", CallID: "c2", Files: files}, nil)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 1, c.Number)
	require.Equal(t, "c1", c.CallID)
	// A blob already kept is kept once.
	c, created, err = s.SaveStep(ctx, session.Step{SessionID: "s", Base: "base", Tree: "t2", CallID: "c3",
		Files: []session.StepFile{{Path: "a.txt", Mode: "100644", Blob: "b1"}}}, map[string][]byte{"b1": []byte("sealed-1")})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 2, c.Number)
	all, err := s.Steps(ctx, "s")
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, files, all[0].Files)
	require.Empty(t, all[0].Skipped)
	require.Equal(t, "t2", all[1].Tree)
	last, err := s.LastStep(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, 2, last.Number)
	_, err = s.LastStep(ctx, "none")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	// A new base with its bundle is a step even with the same tree.
	c, created, err = s.SaveStep(ctx, session.Step{SessionID: "s", Base: "base2", Tree: "t2", CallID: "accept", Bundle: "b2",
		Skipped: []string{"big.bin: larger than 100 MiB"}}, map[string][]byte{"b2": []byte("bundle")})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 3, c.Number)
	last, err = s.LastStep(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, "b2", last.Bundle)
	require.Equal(t, []string{"big.bin: larger than 100 MiB"}, last.Skipped)
	b, err := s.Blob(ctx, "b1")
	require.NoError(t, err)
	require.Equal(t, []byte("sealed-1"), b)
	_, err = s.Blob(ctx, "nope")
	require.ErrorIs(t, err, errdefs.ErrNotFound)

	// Forgetting a session's checkpoints keeps the blobs another uses.
	newSession(t, s, "s2", agent("a2", 0))
	_, _, err = s.SaveStep(ctx, session.Step{SessionID: "s2", Base: "base", Tree: "t9", CallID: "c",
		Files: []session.StepFile{{Path: "same.txt", Mode: "100644", Blob: "b1"}}}, nil)
	require.NoError(t, err)
	gone, err := s.DeleteSteps(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, int64(1), gone, "b2 goes, b1 stays (s2 uses it)")
	all, err = s.Steps(ctx, "s")
	require.NoError(t, err)
	require.Empty(t, all)
	_, err = s.Blob(ctx, "b1")
	require.NoError(t, err)
	_, err = s.Blob(ctx, "b2")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	gone, err = s.DeleteSteps(ctx, "s2")
	require.NoError(t, err)
	require.Equal(t, int64(1), gone)
}

func testServerSecret(t *testing.T, s store.Store) {
	got, err := s.ServerSecret(ctx, "audit", []byte("first"))
	require.NoError(t, err)
	require.Equal(t, []byte("first"), got)
	got, err = s.ServerSecret(ctx, "audit", []byte("second"))
	require.NoError(t, err)
	require.Equal(t, []byte("first"), got, "the first one kept wins")
	got, err = s.ServerSecret(ctx, "other", []byte{0, 1, 0xff})
	require.NoError(t, err)
	require.Equal(t, []byte{0, 1, 0xff}, got)
}

func testProjectPolicy(t *testing.T, s store.Store) {
	p, err := s.GetProjectPolicy(ctx, "p")
	require.NoError(t, err)
	require.Nil(t, p)
	require.NoError(t, s.SetProjectPolicy(ctx, "p", json.RawMessage(`{"default":"disabled"}`)))
	p, err = s.GetProjectPolicy(ctx, "p")
	require.NoError(t, err)
	require.JSONEq(t, `{"default":"disabled"}`, string(p))
}

func testDelivery(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	require.NoError(t, s.SetWorkspace(ctx, "s", "node-a", "/w", "base1"))
	require.NoError(t, s.Deliver(ctx, "s", "base1", "base2", "accepted", operator, "commit abc"))
	x, err := s.GetSession(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, "node-a", x.Node, "the node holding the copy")
	require.Equal(t, "/w", x.Workdir)
	require.Equal(t, "accepted", x.Delivery)
	require.Equal(t, "base2", x.BaseCommit, "later changes diff against the accepted snapshot")
	require.ErrorIs(t, s.Deliver(ctx, "s", "base1", "base1", "rejected", operator, ""), errdefs.ErrConflict, "that diff was delivered already")
	require.NoError(t, s.Deliver(ctx, "s", "base2", "base2", "rejected", operator, "changes discarded"))
	x, err = s.GetSession(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, "rejected", x.Delivery)
	require.Equal(t, "base2", x.BaseCommit)
}

func testUsage(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	u := session.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.5}
	require.NoError(t, s.RecordUsage(ctx, "s", "t1", 0, "m", u))
	require.NoError(t, s.RecordUsage(ctx, "s", "t1", 0, "m", u), "a retried step counts once")
	require.NoError(t, s.RecordUsage(ctx, "s", "t1", 1, "m", u))
	require.NoError(t, s.RecordUsage(ctx, "s", "t2", 0, "m", u))
	got, err := s.SessionUsage(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, session.Usage{InputTokens: 300, OutputTokens: 60, CostUSD: 1.5}, got.Usage)
	require.Equal(t, 200, got.Turns["t1"].InputTokens)
}

// testParks: a park holds its recovery command out of every claim; one
// open park per reason; granting makes the command due, expiring cancels
// it; a resolved park cannot be resolved again.
func testParks(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	first, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, s.SettleCommands(ctx, ids(first), session.CommandAccepted, ""))
	recovery := store.NewCommand{ID: "r1", SessionID: "s", Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"go on"}`),
		Sender: session.Sender{Kind: session.SenderSystem, ID: "budget"}}
	p, created, err := s.OpenPark(ctx, session.Park{ID: "p1", SessionID: "s", Reason: "awaiting_extension", Detail: "used 150 of 150 actions", Needs: "an extension"}, recovery)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "r1", p.RecoveryCommand)
	again, created, err := s.OpenPark(ctx, session.Park{ID: "p2", SessionID: "s", Reason: "awaiting_extension"}, store.NewCommand{ID: "r2", SessionID: "s", Kind: session.KindMessage, Sender: recovery.Sender})
	require.NoError(t, err)
	require.False(t, created, "one open park per reason")
	require.Equal(t, "p1", again.ID)
	_, err = s.GetCommand(ctx, "r2")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	c, err := s.GetCommand(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, session.CommandHeld, c.State)
	b, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Empty(t, b, "a held command is never claimed")
	open, err := s.ListParks(ctx, "s", true)
	require.NoError(t, err)
	require.Len(t, open, 1)

	p, err = s.ResolvePark(ctx, "p1", session.ParkGranted, &operator, "go on")
	require.NoError(t, err)
	require.Equal(t, session.ParkGranted, p.Resolution)
	require.Equal(t, operator, *p.ResolvedBy)
	_, err = s.ResolvePark(ctx, "p1", session.ParkExpired, nil, "")
	require.ErrorIs(t, err, errdefs.ErrConflict)
	b, err = s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.Equal(t, "r1", b[0].ID)
	require.NoError(t, s.SettleCommands(ctx, ids(b), session.CommandAccepted, ""))

	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	p, _, err = s.OpenPark(ctx, session.Park{ID: "p3", SessionID: "s", Reason: "provider_outage", ExpiresAt: &exp}, store.NewCommand{ID: "r3", SessionID: "s", Kind: session.KindMessage, Sender: recovery.Sender})
	require.NoError(t, err)
	require.True(t, p.ExpiresAt.Equal(exp))
	_, err = s.ResolvePark(ctx, "p3", session.ParkExpired, nil, "")
	require.NoError(t, err)
	c, err = s.GetCommand(ctx, "r3")
	require.NoError(t, err)
	require.Equal(t, session.CommandCanceled, c.State)
	open, err = s.ListParks(ctx, "", true)
	require.NoError(t, err)
	require.Empty(t, open)
	all, err := s.ListParks(ctx, "s", false)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.NoError(t, s.RaiseSpendCap(ctx, "s", 9))
	x, err := s.GetSession(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, 9.0, x.SpendCapUSD)
}

// testUnfinished: the live sessions a start wakes first are those
// holding a command pending, dispatching or held; a settled one or a
// finished session's are not.
func testUnfinished(t *testing.T, s store.Store) {
	for _, id := range []string{"pending", "claimed", "settled", "held", "failed"} {
		newSession(t, s, id, agent("a-"+id, 0))
	}
	_, err := s.ClaimBatch(ctx, "claimed")
	require.NoError(t, err)
	for _, id := range []string{"settled", "held"} {
		b, err := s.ClaimBatch(ctx, id)
		require.NoError(t, err)
		require.NoError(t, s.SettleCommands(ctx, ids(b), session.CommandAccepted, ""))
	}
	_, _, err = s.AppendCommand(ctx, store.NewCommand{ID: "h1", SessionID: "held", Kind: session.KindMessage,
		Sender: session.Sender{Kind: session.SenderTrigger, ID: "push"}, Held: true})
	require.NoError(t, err)
	require.NoError(t, s.FailSession(ctx, "failed", "boom"))
	got, err := s.Unfinished(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"claimed", "held", "pending"}, got)
}

// testDeliveries: trigger deliveries wait held, out of every claim, and
// flush as one pending command that absorbs them, once.
func testDeliveries(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	first, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, s.SettleCommands(ctx, ids(first), session.CommandAccepted, ""))
	hook := session.Sender{Kind: session.SenderTrigger, ID: "push"}
	for _, id := range []string{"d1", "d2"} {
		_, created, err := s.AppendCommand(ctx, store.NewCommand{ID: id, SessionID: "s", Kind: session.KindMessage, Sender: hook, Held: true})
		require.NoError(t, err)
		require.True(t, created)
	}
	b, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Empty(t, b)
	held, err := s.HeldDeliveries(ctx, "s")
	require.NoError(t, err)
	require.Len(t, held, 2)
	into := store.NewCommand{ID: "agg", SessionID: "s", Kind: session.KindMessage, Sender: hook}
	c, err := s.AbsorbDeliveries(ctx, []string{"d1", "d2"}, into)
	require.NoError(t, err)
	again, err := s.AbsorbDeliveries(ctx, []string{"d1", "d2"}, into)
	require.NoError(t, err, "a retried flush adds nothing")
	require.Equal(t, c.ID, again.ID)
	held, err = s.HeldDeliveries(ctx, "s")
	require.NoError(t, err)
	require.Empty(t, held)
	d1, err := s.GetCommand(ctx, "d1")
	require.NoError(t, err)
	require.Equal(t, session.CommandAccepted, d1.State)
	require.Contains(t, d1.Error, "absorbed into agg")
	b, err = s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.Equal(t, "agg", b[0].ID)
}

// testRepairAndHold: a queued row with its start still pending is active
// work, not repaired; once nothing is in flight it is; a hold is set,
// cannot be set twice, and is released.
func testRepairAndHold(t *testing.T, s store.Store) {
	newSession(t, s, "s", agent("a", 0))
	ok, err := s.Repair(ctx, "s")
	require.NoError(t, err)
	require.False(t, ok, "its start command is pending")
	b, err := s.ClaimBatch(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, s.SettleCommands(ctx, ids(b), session.CommandAccepted, ""))
	ok, err = s.Repair(ctx, "s")
	require.NoError(t, err)
	require.True(t, ok)
	x, err := s.GetSession(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, session.StatusAwaiting, x.Status)
	require.False(t, x.Held())
	h := &session.Hold{By: operator, Reason: "inspect"}
	require.NoError(t, s.SetHold(ctx, "s", h))
	require.ErrorIs(t, s.SetHold(ctx, "s", h), errdefs.ErrConflict)
	x, err = s.GetSession(ctx, "s")
	require.NoError(t, err)
	require.True(t, x.Held())
	require.Equal(t, "inspect", x.Hold.Reason)
	require.NoError(t, s.SetHold(ctx, "s", nil))
	require.ErrorIs(t, s.SetHold(ctx, "s", nil), errdefs.ErrConflict)
}

func testConnections(t *testing.T, s store.Store) {
	require.NoError(t, s.EnsureProject(ctx, "p"))
	c := forge.Connection{Project: "p", Name: "forge", Kind: forge.Gitea, URL: "https://git.example.com", Repositories: []string{"team/*"}, CreatedBy: "ana"}
	added, err := s.AddConnection(ctx, c, []byte("sealed-1"))
	require.NoError(t, err)
	require.False(t, added.CreatedAt.IsZero())
	_, err = s.AddConnection(ctx, c, []byte("sealed-2"))
	require.ErrorIs(t, err, errdefs.ErrConflict, "a live connection's name is taken")
	_, err = s.AddConnection(ctx, forge.Connection{Project: "nowhere", Name: "x", Kind: forge.Git, URL: "https://h", Repositories: []string{"*"}}, []byte("s"))
	require.ErrorIs(t, err, errdefs.ErrNotFound, "a project that does not exist")
	got, sealed, err := s.Connection(ctx, "p", "forge")
	require.NoError(t, err)
	require.Equal(t, []byte("sealed-1"), sealed)
	require.Equal(t, []string{"team/*"}, got.Repositories)
	require.True(t, got.Live())
	revoked, err := s.RevokeConnection(ctx, "p", "forge", "bo")
	require.NoError(t, err)
	require.False(t, revoked.Live())
	require.Equal(t, "bo", revoked.RevokedBy)
	_, sealed, err = s.Connection(ctx, "p", "forge")
	require.NoError(t, err)
	require.Empty(t, sealed, "a revoked connection's credential is gone")
	_, err = s.RevokeConnection(ctx, "p", "forge", "bo")
	require.ErrorIs(t, err, errdefs.ErrConflict)
	_, err = s.RevokeConnection(ctx, "p", "none", "bo")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	_, err = s.AddConnection(ctx, c, []byte("sealed-3"))
	require.NoError(t, err, "a revoked connection's name may be given again")
	list, err := s.ListConnections(ctx, "p")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.True(t, list[0].Live())

	r := &session.Remote{Connection: "forge", URL: "https://git.example.com/team/app", Path: "team/app", Ref: "main", Commit: "0123456789abcdef0123456789abcdef01234567"}
	x, _, err := s.CreateSession(ctx, store.NewSession{ID: "remote", Project: "p", Agent: agent("a", 0), CreatedBy: operator, StartKind: session.KindStart, Repo: r.URL, Remote: r})
	require.NoError(t, err)
	require.Equal(t, r, x.Remote)
	x, err = s.GetSession(ctx, "remote")
	require.NoError(t, err)
	require.Equal(t, r, x.Remote)

	b := session.Binding{SessionID: "remote", Project: "p", Kind: session.BindPullRequest, Connection: "forge", Repo: "team/app", Number: 7, URL: "https://git.example.com/team/app/pulls/7", Held: true}
	first, err := s.Bind(ctx, b)
	require.NoError(t, err)
	again, err := s.Bind(ctx, b)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "bound once")
	n, err := s.ReleaseBindings(ctx, "p", "forge", "team/app", 8, "trigger:closed")
	require.NoError(t, err)
	require.Zero(t, n, "another pull request")
	n, err = s.ReleaseBindings(ctx, "p", "forge", "team/app", 7, "trigger:closed")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	bound, err := s.Bindings(ctx, "remote")
	require.NoError(t, err)
	require.Len(t, bound, 1)
	require.NotNil(t, bound[0].ReleasedAt)
	require.Equal(t, "trigger:closed", bound[0].ReleasedBy)
	b.Number = 9
	_, err = s.Bind(ctx, b)
	require.NoError(t, err)
	// Held and live: neither its agent nor the sweeper archives it, and
	// the refusal changes nothing; a person does, releasing it.
	for _, by := range []session.Sender{{Kind: session.SenderAgent, ID: "remote"}, {Kind: session.SenderSystem, ID: "sweeper"}} {
		var held *session.HeldError
		require.ErrorAs(t, s.Archive(ctx, "remote", by, "done"), &held, by.String())
		require.Equal(t, b.URL, held.URL)
	}
	x, err = s.GetSession(ctx, "remote")
	require.NoError(t, err)
	require.Nil(t, x.ArchivedAt)
	require.Empty(t, x.Handoff, "a refused archive keeps no handoff")
	require.NoError(t, s.Archive(ctx, "remote", operator, ""))
	bound, err = s.Bindings(ctx, "remote")
	require.NoError(t, err)
	require.Len(t, bound, 2)
	require.NotNil(t, bound[1].ReleasedAt, "archiving releases the session's bindings")
}

func testCensus(t *testing.T, s store.Store) {
	c, err := s.Census(ctx)
	require.NoError(t, err)
	require.Empty(t, c.Sessions, "nothing yet")
	newSession(t, s, "s1", agent("a", 0))
	newSession(t, s, "s2", agent("a", 0))
	newSession(t, s, "s3", agent("a", 0))
	require.NoError(t, s.StopSession(ctx, "s2", session.StopPayload{Reason: "done"}))
	require.NoError(t, s.Archive(ctx, "s3", operator, ""))
	first, err := s.ClaimBatch(ctx, "s1")
	require.NoError(t, err)
	require.NoError(t, s.SettleCommands(ctx, ids(first), session.CommandAccepted, ""))
	_, _, err = s.OpenPark(ctx, session.Park{ID: "p1", SessionID: "s1", Reason: "awaiting_extension"},
		store.NewCommand{ID: "r1", SessionID: "s1", Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"go on"}`), Sender: operator})
	require.NoError(t, err)
	_, err = s.CreateApproval(ctx, session.Approval{ID: "ap1", SessionID: "s1", TurnID: "t", ToolCallID: "c", Tool: "write_file", Digest: "sha256:x", ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	c, err = s.Census(ctx)
	require.NoError(t, err)
	require.Equal(t, map[session.Status]int{session.StatusQueued: 1, session.StatusStopped: 1}, c.Sessions, "the archived session is not counted")
	require.Equal(t, map[string]int{"awaiting_extension": 1}, c.Parked)
	require.Equal(t, 1, c.Approvals)
}

// testChats: a project's app replaced whole, a code used once, links
// per Slack user, a thread bound once each way, a lease held by one
// owner, a delivery seen twice is told.
func testChats(t *testing.T, s store.Store) {
	require.NoError(t, s.CreateProject(ctx, "p"))
	app := chat.App{Project: "p", Team: "T1", Channels: []chat.Channel{{ID: "C1", Agent: "fixer", Repo: "team/app"}}, CreatedBy: "ana"}
	_, err := s.SetChatApp(ctx, app, []byte("sealed-1"))
	require.NoError(t, err)
	app.Channels[0].Agent = "other"
	_, err = s.SetChatApp(ctx, app, []byte("sealed-2"))
	require.NoError(t, err)
	got, sealed, err := s.ChatApp(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, "other", got.Channels[0].Agent)
	require.Equal(t, "sealed-2", string(sealed))
	_, _, err = s.ChatApp(ctx, "q")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	_, err = s.SetChatApp(ctx, chat.App{Project: "missing", Team: "T1"}, []byte("x"))
	require.ErrorIs(t, err, errdefs.ErrNotFound)

	_, digest := chat.NewCode()
	require.NoError(t, s.AddChatCode(ctx, digest, chat.Link{Project: "p", Team: "T1", SlackUser: "U1"}, time.Now().Add(time.Minute)))
	l, err := s.UseChatCode(ctx, digest)
	require.NoError(t, err)
	require.Equal(t, chat.Link{Project: "p", Team: "T1", SlackUser: "U1"}, l)
	_, err = s.UseChatCode(ctx, digest)
	require.ErrorIs(t, err, errdefs.ErrNotFound, "a code is used once")
	_, old := chat.NewCode()
	require.NoError(t, s.AddChatCode(ctx, old, chat.Link{Project: "p", Team: "T1", SlackUser: "U2"}, time.Now().Add(-time.Minute)))
	_, err = s.UseChatCode(ctx, old)
	require.ErrorIs(t, err, errdefs.ErrNotFound, "an expired code is refused")

	_, err = s.ChatUser(ctx, "p", "T1", "U1")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	_, err = s.LinkChatUser(ctx, chat.Link{Project: "p", Team: "T1", SlackUser: "U1", User: "ana"})
	require.NoError(t, err)
	who, err := s.ChatUser(ctx, "p", "T1", "U1")
	require.NoError(t, err)
	require.Equal(t, "ana", who)
	_, err = s.ChatUser(ctx, "q", "T1", "U1")
	require.ErrorIs(t, err, errdefs.ErrNotFound, "a link is good for its project's app alone")
	links, err := s.ChatLinks(ctx, "ana")
	require.NoError(t, err)
	require.Len(t, links, 1)
	require.ErrorIs(t, s.UnlinkChatUser(ctx, chat.Link{Project: "p", Team: "T1", SlackUser: "U1", User: "bob"}), errdefs.ErrNotFound, "only one's own link")
	require.NoError(t, s.UnlinkChatUser(ctx, chat.Link{Project: "p", Team: "T1", SlackUser: "U1", User: "ana"}))

	x := newSession(t, s, "s1", agent("a", 0))
	y := newSession(t, s, "s2", agent("b", 0))
	th := chat.Thread{SessionID: x.ID, Project: "default", Team: "T1", Channel: "C1", TS: "1.0"}
	_, err = s.BindThread(ctx, th)
	require.NoError(t, err)
	_, err = s.BindThread(ctx, th)
	require.NoError(t, err, "the same binding again")
	_, err = s.BindThread(ctx, chat.Thread{SessionID: y.ID, Project: "default", Team: "T1", Channel: "C1", TS: "1.0"})
	require.ErrorIs(t, err, errdefs.ErrConflict, "a thread has one session")
	_, err = s.BindThread(ctx, chat.Thread{SessionID: x.ID, Project: "default", Team: "T1", Channel: "C1", TS: "2.0"})
	require.ErrorIs(t, err, errdefs.ErrConflict, "a session has one thread")
	at, err := s.ThreadAt(ctx, "T1", "C1", "1.0")
	require.NoError(t, err)
	require.Equal(t, x.ID, at.SessionID)

	ok, err := s.LeaseThread(ctx, x.ID, "node-a", time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.LeaseThread(ctx, x.ID, "node-b", time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.False(t, ok, "held by another")
	at.Cursor, at.State.StatusTS, at.Done = 7, "9.9", true
	require.ErrorIs(t, s.SaveThread(ctx, at, "node-b"), errdefs.ErrConflict)
	require.NoError(t, s.SaveThread(ctx, at, "node-a"))
	open, err := s.OpenThreads(ctx)
	require.NoError(t, err)
	require.Empty(t, open, "a thread done is not open")
	back, err := s.ThreadOf(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, int64(7), back.Cursor)
	require.Equal(t, "9.9", back.State.StatusTS)

	seen, err := s.SeenDelivery(ctx, "d1", time.Minute)
	require.NoError(t, err)
	require.False(t, seen)
	seen, err = s.SeenDelivery(ctx, "d1", time.Minute)
	require.NoError(t, err)
	require.True(t, seen)
}
