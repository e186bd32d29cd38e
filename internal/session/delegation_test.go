package session

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReturned(t *testing.T) {
	text := func(turn, s string) Event {
		d, _ := json.Marshal(TextData{Text: s})
		return Event{TurnID: turn, Kind: EventAssistantText, Data: d}
	}
	done := []Turn{{ID: "t1", Status: TurnCompleted}, {ID: "t2", Status: TurnCompleted}}
	events := []Event{text("t1", "first "), text("t2", "all "), text("t2", "done")}
	cases := []struct {
		name   string
		c      Session
		turns  []Turn
		parks  int
		cmds   []Command
		done   bool
		report string
	}{
		{"working", Session{Status: StatusRunning}, done, 0, nil, false, ""},
		{"queued", Session{Status: StatusQueued}, nil, 0, nil, false, ""},
		{"no turn yet", Session{Status: StatusAwaiting}, nil, 0, nil, false, ""},
		{"its last turn's words", Session{Status: StatusAwaiting}, done, 0, nil, true, "all done"},
		{"waits for an answer", Session{Status: StatusAwaiting}, []Turn{{ID: "t1", Status: TurnWaitingForInput}}, 0, nil, false, ""},
		{"parked", Session{Status: StatusAwaiting}, done, 1, nil, false, ""},
		{"a message to read", Session{Status: StatusAwaiting}, done, 0, []Command{{State: CommandPending}}, false, ""},
		{"its turn failed", Session{Status: StatusAwaiting}, []Turn{{ID: "t2", Status: TurnFailed, Error: "model call failed"}}, 0, nil, true,
			"its turn failed: model call failed\nall done"},
		{"failed", Session{Status: StatusFailed, Error: "provisioning failed"}, nil, 0, nil, true, "it failed: provisioning failed"},
		{"stopped for budget", Session{Status: StatusStopped, StopReason: StopBudget + ": actions"}, done, 0, []Command{{State: CommandPending}}, true,
			"it was stopped (budget exhausted: actions)\nall done"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, r := Returned(c.c, c.turns, c.parks, c.cmds, events, 1000)
			if d != c.done || r != c.report {
				t.Fatalf("got %v %q, want %v %q", d, r, c.done, c.report)
			}
		})
	}
	long := []Event{text("t2", strings.Repeat("x", 100)+"END")}
	if _, r := Returned(Session{Status: StatusAwaiting}, done, 0, nil, long, 20); !strings.HasSuffix(r, "END") || len(r) > 20+len("…") {
		t.Fatalf("a long report keeps its end, bounded: %q", r)
	}
}

func TestForest(t *testing.T) {
	by := func(id string) Sender { return Sender{Kind: SenderAgent, ID: id} }
	list := []Session{
		{ID: "c2", CreatedBy: by("p")},
		{ID: "g", CreatedBy: by("c1")},
		{ID: "other", CreatedBy: Sender{Kind: SenderOperator, ID: "ana"}},
		{ID: "c1", CreatedBy: by("p")},
		{ID: "orphan", CreatedBy: by("gone")},
		{ID: "p", CreatedBy: Sender{Kind: SenderOperator, ID: "ana"}},
		{ID: "loop", CreatedBy: by("loop")},
	}
	var got []string
	for _, n := range Forest(list) {
		got = append(got, strings.Repeat(">", n.Depth)+n.ID)
	}
	want := "other orphan p >c2 >c1 >>g loop"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
}
