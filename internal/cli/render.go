package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/agent"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/session"
)

// renderer prints transcript events for a person: streamed text inline,
// tool calls as one line each, questions with their options.
type renderer struct {
	w         io.Writer
	midText   bool // the last thing printed was streamed text without a newline
	lastPhase session.RuntimePhase
}

func (r *renderer) line(format string, args ...any) {
	if r.midText {
		fmt.Fprintln(r.w)
		r.midText = false
	}
	fmt.Fprintf(r.w, format+"\n", args...)
}

func (r *renderer) event(e session.Event) {
	switch e.Kind {
	case session.EventStatus:
		var d session.StatusData
		_ = json.Unmarshal(e.Data, &d)
		phase := r.lastPhase
		r.lastPhase = d.RuntimePhase
		switch {
		case d.RuntimePhase != "":
			r.line("· provisioning: %s", d.RuntimePhase)
		case phase != "":
			r.line("· runtime ready")
		case d.Error != "":
			r.line("· session %s: %s", d.Status, d.Error)
		default:
			r.line("· session %s", d.Status)
		}
	case session.EventUserMessage:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		who := "you"
		if d.Sender != nil {
			who = d.Sender.String()
		}
		r.line("› %s: %s", who, d.Text)
	case session.EventAssistantText:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		if !r.midText {
			fmt.Fprint(r.w, "  ")
		}
		fmt.Fprint(r.w, d.Text)
		r.midText = true
	case session.EventToolCall:
		var d session.ToolCallData
		_ = json.Unmarshal(e.Data, &d)
		switch d.State {
		case session.CallGenerated:
			r.line("  ⚙ %s %s", d.Name, oneLine(string(d.Args), 100))
		case session.CallAwaitingApproval:
			r.line("    ? %s needs permission (%s)", d.Name, d.Rule)
		case session.CallCalling:
			if d.By != nil && d.By.Kind == session.ByHuman {
				r.line("    ✓ approved by %s", d.By.By)
			}
		case session.CallDone:
			if d.Name != "ask_user" {
				r.line("    ✓ %s", oneLine(d.Result, 100))
			}
		case session.CallErrored, session.CallRejected, session.CallCanceled:
			r.line("    ✗ %s %s: %s", d.Name, d.State, oneLine(d.Error, 200))
		}
	case session.EventQuestion:
		var q session.Question
		_ = json.Unmarshal(e.Data, &q)
		for _, item := range q.Questions {
			opts := ""
			if len(item.Options) > 0 {
				opts = " [" + strings.Join(item.Options, " / ") + "]"
			}
			r.line("? %s%s", item.Question, opts)
		}
	case session.EventAnswer:
		var a session.AnswerPayload
		_ = json.Unmarshal(e.Data, &a)
		var parts []string
		for k, v := range a.Answers {
			parts = append(parts, k+"="+v)
		}
		if a.Response != "" {
			parts = append(parts, a.Response)
		}
		r.line("› answer: %s", strings.Join(parts, ", "))
	case session.EventTurn:
		var d session.TurnData
		_ = json.Unmarshal(e.Data, &d)
		switch d.Status {
		case session.TurnFailed:
			r.line("· turn failed (%s scope): %s", d.FailureScope, d.Error)
		case session.TurnCompleted:
			r.line("· turn completed")
		}
	case session.EventNotice:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		r.line("· %s", d.Text)
	case session.EventPhase:
		var d session.PhaseData
		_ = json.Unmarshal(e.Data, &d)
		took := (time.Duration(d.DurationMs) * time.Millisecond).String()
		if d.Error != "" {
			r.line("  ✗ %s failed after %s", d.Phase, took)
		} else {
			r.line("  ✓ %s in %s: %s", d.Phase, took, d.Detail)
		}
	case agent.EventCompaction:
		var d agent.Compaction
		_ = json.Unmarshal(e.Data, &d)
		r.line("· conversation compacted to fit the model's context window: ~%d → ~%d tokens (%d messages summarized)", d.TokensBefore, d.TokensAfter, d.Messages-1)
	case session.EventPark:
		var d session.ParkData
		_ = json.Unmarshal(e.Data, &d)
		if d.Park.ResolvedAt == nil {
			r.line("· parked (%s): %s\n  needs %s", d.Park.Reason, d.Park.Detail, d.Park.Needs)
		} else {
			by := ""
			if d.Park.ResolvedBy != nil {
				by = " by " + d.Park.ResolvedBy.String()
			}
			r.line("· park %s: %s%s", d.Park.Reason, d.Park.Resolution, by)
		}
	case session.EventNetwork:
		var d session.NetworkData
		_ = json.Unmarshal(e.Data, &d)
		dest := net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		switch {
		case !d.Allowed:
			r.line("    ⛔ %s network to %s refused: %s", d.Phase, dest, d.Reason)
		case d.Error != "":
			r.line("    ↯ %s network to %s failed: %s", d.Phase, dest, oneLine(d.Error, 100))
		default:
			r.line("    ⇄ %s network to %s: %s up, %s down, %s", d.Phase, dest, engine.BytesHuman(d.BytesUp), engine.BytesHuman(d.BytesDown),
				(time.Duration(d.DurationMs) * time.Millisecond).String())
		}
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return session.TrimRunes(s, n)
}
