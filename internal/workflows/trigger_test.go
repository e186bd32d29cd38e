package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// deliver holds a trigger delivery for the session and signals it, as
// Service.Sessions().Trigger does.
func (f *fixture) deliver(t *testing.T, id, event, key string) {
	t.Helper()
	d := session.Delivery{Trigger: "hook", Event: event, Key: key, Message: "event " + key}
	payload, _ := json.Marshal(session.MessagePayload{Message: d.Message, Deliveries: []session.Delivery{d}})
	c, _, err := f.store.AppendCommand(context.Background(), store.NewCommand{ID: id + "-" + key, SessionID: id, Kind: session.KindMessage,
		Payload: payload, Sender: session.Sender{Kind: session.SenderTrigger, ID: "hook"}, Held: true})
	require.NoError(t, err)
	f.env.SignalWorkflow(SignalCommand, Notice{CommandID: c.ID, Kind: durable.NoticeDelivery})
}

// TestBurstOfDeliveriesIsOneTurn: five deliveries a second apart wait in
// the held lane and flush together, 5 s after the oldest: one turn, whose
// message shows each delivery.
func TestBurstOfDeliveriesIsOneTurn(t *testing.T) {
	f := setup(t)
	f.create(t, "s1", "replay/testdata/script.yaml", "")
	var flushedBy time.Duration
	for i := range 5 {
		f.env.RegisterDelayedCallback(func() { f.deliver(t, "s1", "github.push", fmt.Sprintf("d%d", i)) }, time.Minute+time.Duration(i)*time.Second)
	}
	f.env.RegisterDelayedCallback(func() {
		held, err := f.store.HeldDeliveries(context.Background(), "s1")
		require.NoError(t, err)
		require.Len(t, held, 5, "still held 4.9 s after the oldest")
	}, time.Minute+4900*time.Millisecond)
	f.env.RegisterDelayedCallback(func() {
		held, err := f.store.HeldDeliveries(context.Background(), "s1")
		require.NoError(t, err)
		require.Empty(t, held, "flushed 5 s after the oldest")
		flushedBy = time.Minute + 5100*time.Millisecond
	}, time.Minute+5100*time.Millisecond)
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
	require.NotZero(t, flushedBy)
	turns, err := f.store.ListTurns(context.Background(), "s1")
	require.NoError(t, err)
	require.Len(t, turns, 1, "the bare start opened none; the burst is one turn")
	events, err := f.store.ListEvents(context.Background(), "s1", 0, 0)
	require.NoError(t, err)
	var msg session.TextData
	for _, e := range events {
		if e.Kind == session.EventUserMessage {
			require.NoError(t, json.Unmarshal(e.Data, &msg))
		}
	}
	require.Contains(t, msg.Text, "5 events arrived together")
	for i := range 5 {
		require.Contains(t, msg.Text, fmt.Sprintf("event d%d", i))
	}
}

// TestSingleDeliveryWaitsTwoAndAHalfSeconds: one delivery flushes 2.5 s
// after it arrived.
func TestSingleDeliveryWaitsTwoAndAHalfSeconds(t *testing.T) {
	f := setup(t)
	f.create(t, "s1", "replay/testdata/script.yaml", "")
	f.env.RegisterDelayedCallback(func() { f.deliver(t, "s1", "github.push", "d0") }, time.Minute)
	for _, c := range []struct {
		at   time.Duration
		held int
	}{{2400 * time.Millisecond, 1}, {2600 * time.Millisecond, 0}} {
		f.env.RegisterDelayedCallback(func() {
			held, err := f.store.HeldDeliveries(context.Background(), "s1")
			require.NoError(t, err)
			require.Len(t, held, c.held, "at +%s", c.at)
		}, time.Minute+c.at)
	}
	f.env.RegisterDelayedCallback(func() {
		f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
	}, time.Hour)
	f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
	require.NoError(t, f.env.GetWorkflowError())
}

// TestCIVerdictWaitsButSteeringInterrupts: while a turn waits on an
// approval, a CI verdict does not interrupt it (it runs once the session
// is idle); any other delivery does, so the steering lands at once.
func TestCIVerdictWaitsButSteeringInterrupts(t *testing.T) {
	for _, c := range []struct {
		event       string
		interrupted bool
	}{{"github.check_run.completed", false}, {"github.issue_comment.created", true}} {
		t.Run(c.event, func(t *testing.T) {
			f := setup(t)
			ask, _ := json.Marshal(map[string]any{"default": "ask", "approvalTtl": "2h"})
			f.policy = ask
			f.create(t, "s1", "replay/testdata/script.yaml", "finish the notes")
			f.env.RegisterDelayedCallback(func() { f.deliver(t, "s1", c.event, "ci") }, 10*time.Minute)
			f.env.RegisterDelayedCallback(func() {
				turns, err := f.store.ListTurns(context.Background(), "s1")
				require.NoError(t, err)
				first := turns[0]
				if c.interrupted {
					require.Equal(t, session.TurnFailed, first.Status, "steering interrupts the turn")
					require.Contains(t, first.Error, "interrupted")
				} else {
					require.Equal(t, session.TurnInProgress, first.Status, "a CI verdict waits for the turn")
				}
				f.send(t, "s1", session.KindStop, session.StopPayload{Reason: "done"})
			}, 20*time.Minute)
			f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "s1"})
			require.NoError(t, f.env.GetWorkflowError())
		})
	}
}

// ticks records the scheduled ticks delivered.
type ticks struct{ keys []string }

func (r *ticks) Trigger(_ context.Context, project, name, event, key string, _ any) (wire.TriggerResult, error) {
	r.keys = append(r.keys, project+"/"+name+"/"+event+"/"+key)
	return wire.TriggerResult{Routed: "spawn"}, nil
}

// TestScheduleFiresEveryTick: a trigger's cron schedule fires once per
// tick: an hour of a */15 schedule is four deliveries, each keyed by its
// run.
func TestScheduleFiresEveryTick(t *testing.T) {
	f := setup(t)
	r := &ticks{}
	f.acts.Triggers = r
	f.env.RegisterWorkflow(ScheduleWorkflow)
	f.env.RegisterDelayedCallback(f.env.CancelWorkflow, time.Hour+time.Minute)
	f.env.ExecuteWorkflow(ScheduleWorkflow, durable.TriggerRef("team", "nightly"), "*/15 * * * *")
	require.GreaterOrEqual(t, len(r.keys), 4)
	require.LessOrEqual(t, len(r.keys), 5)
	seen := map[string]bool{}
	for _, k := range r.keys {
		require.True(t, strings.HasPrefix(k, "team/nightly/schedule/tick-"), k)
		require.False(t, seen[k], "each tick has its own key")
		seen[k] = true
	}
}
