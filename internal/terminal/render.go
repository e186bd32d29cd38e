package terminal

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/session"
)

// Renderer prints transcript events for a person: streamed text inline,
// tool calls as one line each, questions with their options.
type Renderer struct {
	w         io.Writer
	midText   bool // the last thing printed was streamed text without a newline
	lastPhase session.RuntimePhase
	// full prints every call's whole result (sessions logs --full) in
	// place of the live output and the tail.
	full bool
	// partial is the unended last line of a running command's live
	// output; streamed notes the calls whose output was shown live.
	partial  map[string]string
	streamed map[string]bool
	// hints says how to act on what is shown (logs, which cannot).
	hints bool
}

// NewRenderer prints to w: every call's whole result when full (in
// place of its live output and tail), how to act on what is shown when
// hints (a log, which cannot act).
func NewRenderer(w io.Writer, full, hints bool) *Renderer {
	return &Renderer{w: w, full: full, hints: hints}
}

// Line prints a line, after ending streamed text.
func (r *Renderer) Line(format string, args ...any) {
	if r.midText {
		fmt.Fprintln(r.w)
		r.midText = false
	}
	fmt.Fprintf(r.w, format+"\n", args...)
}

// Event prints one transcript event.
func (r *Renderer) Event(e session.Event) {
	switch e.Kind {
	case session.EventStatus:
		var d session.StatusData
		_ = json.Unmarshal(e.Data, &d)
		phase := r.lastPhase
		r.lastPhase = d.RuntimePhase
		switch {
		case d.RuntimePhase != "":
			r.Line("· provisioning: %s", d.RuntimePhase)
		case phase != "":
			r.Line("· runtime ready")
		case d.Error != "":
			r.Line("· session %s: %s", d.Status, Visible(d.Error, true))
		default:
			r.Line("· session %s", d.Status)
		}
	case session.EventUserMessage:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		who := "you"
		if d.Sender != nil {
			who = d.Sender.String()
		}
		r.Line("› %s: %s", Visible(who, false), Visible(d.Text, true))
		for _, a := range d.Attachments {
			r.Line("  attached %s (%s, %s, sha256 %s) at %s", Visible(a.Name, false), Visible(a.Type, false), clip.Bytes(a.Size), clip.ID(a.Digest), Visible(a.Path(), false))
		}
	case session.EventAssistantText:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		if !r.midText {
			fmt.Fprint(r.w, "  ")
		}
		fmt.Fprint(r.w, Visible(d.Text, true))
		r.midText = true
	case session.EventToolCall:
		var d session.ToolCallData
		_ = json.Unmarshal(e.Data, &d)
		switch d.State {
		case session.CallGenerated:
			r.Line("  ⚙ %s %s", Visible(d.Name, false), OneLine(ArgsText(d.Args), 100))
		case session.CallAwaitingApproval:
			r.Line("    ? %s needs permission (%s)", Visible(d.Name, false), Visible(d.Rule, false))
			if r.hints && d.Approval != "" {
				r.Line("      see it whole: paddock approvals show %s   |   decide here: paddock attach %s", Visible(d.Approval, false), Visible(e.SessionID, false))
			}
		case session.CallCalling:
			if d.By != nil && d.By.Kind == session.ByHuman {
				r.Line("    ✓ approved by %s", Visible(d.By.By, false))
			}
		case session.CallDone:
			r.endLive(d.ID)
			if d.Name != "ask_user" {
				r.done(d)
			}
		case session.CallErrored, session.CallRejected, session.CallCanceled:
			r.endLive(d.ID)
			r.Line("    ✗ %s %s: %s", Visible(d.Name, false), d.State, OneLine(d.Error, 200))
		}
	case session.EventChildApproval:
		var d session.ChildApproval
		_ = json.Unmarshal(e.Data, &d)
		r.Line("⇢ delegated session %s (to %s) waits for approval of %s", clip.ID(d.Session), OneLine(d.Task, 80), Visible(d.Call.Name, false))
	case session.EventOutput:
		var d session.OutputData
		_ = json.Unmarshal(e.Data, &d)
		r.live(e.SessionID, d)
	case session.EventQuestion:
		var q session.Question
		_ = json.Unmarshal(e.Data, &q)
		for _, item := range q.Questions {
			opts := ""
			if len(item.Options) > 0 {
				shown := make([]string, len(item.Options))
				for i, o := range item.Options {
					shown[i] = Visible(o, false)
				}
				opts = " [" + strings.Join(shown, " / ") + "]"
			}
			r.Line("? %s%s", Visible(item.Question, true), opts)
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
		r.Line("› answer: %s", Visible(strings.Join(parts, ", "), true))
	case session.EventTurn:
		var d session.TurnData
		_ = json.Unmarshal(e.Data, &d)
		switch d.Status {
		case session.TurnFailed:
			r.Line("· turn failed (%s scope): %s", d.FailureScope, Visible(d.Error, true))
		case session.TurnCompleted:
			r.Line("· turn completed")
		}
	case session.EventNotice:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		r.Line("· %s", Visible(d.Text, true))
	case session.EventPhase:
		var d session.PhaseData
		_ = json.Unmarshal(e.Data, &d)
		took := (time.Duration(d.DurationMs) * time.Millisecond).String()
		if d.Error != "" {
			r.Line("  ✗ %s failed after %s", d.Phase, took)
		} else {
			r.Line("  ✓ %s in %s: %s", d.Phase, took, Visible(d.Detail, true))
		}
	case session.EventCompaction:
		var d session.Compaction
		_ = json.Unmarshal(e.Data, &d)
		r.Line("· conversation compacted to fit the model's context window: ~%d → ~%d tokens (%d messages summarized)", d.TokensBefore, d.TokensAfter, d.Messages-1)
	case session.EventPark:
		var d session.ParkData
		_ = json.Unmarshal(e.Data, &d)
		if d.Park.ResolvedAt == nil {
			r.Line("· parked (%s): %s\n  needs %s", d.Park.Reason, Visible(d.Park.Detail, true), d.Park.Needs)
		} else {
			by := ""
			if d.Park.ResolvedBy != nil {
				by = " by " + d.Park.ResolvedBy.String()
			}
			r.Line("· park %s: %s%s", d.Park.Reason, Visible(d.Park.Resolution, true), Visible(by, false))
		}
	case session.EventNetwork:
		var d session.NetworkData
		_ = json.Unmarshal(e.Data, &d)
		dest := Visible(net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), false)
		switch {
		case !d.Allowed:
			r.Line("    ⛔ %s network to %s refused: %s", d.Phase, dest, Visible(d.Reason, false))
		case d.Error != "":
			r.Line("    ↯ %s network to %s failed: %s", d.Phase, dest, OneLine(d.Error, 100))
		default:
			r.Line("    ⇄ %s network to %s: %s up, %s down, %s", d.Phase, dest, clip.Bytes(d.BytesUp), clip.Bytes(d.BytesDown),
				(time.Duration(d.DurationMs) * time.Millisecond).String())
		}
	}
}

// failedRun: the line Paddock appends to a command's output when it did
// not succeed.
var failedRun = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n\[(exit status \d+|timed out after [^\]]*)\]$`) })

// live prints a running command's output as it comes, each whole line
// escaped; a line not yet ended waits for its end (or the call's).
func (r *Renderer) live(sessionID string, d session.OutputData) {
	if r.full {
		return // the whole result follows
	}
	if r.partial == nil {
		r.partial, r.streamed = map[string]string{}, map[string]bool{}
	}
	r.streamed[d.CallID] = true
	text := r.partial[d.CallID] + d.Text
	lines := strings.Split(text, "\n")
	r.partial[d.CallID] = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		r.Line("      │ %s", outputLine(l, 200))
	}
	if d.Cut {
		r.endLive(d.CallID)
		r.Line("      │ … live output stops here; all of it: paddock sessions logs --full %s", sessionID)
	}
}

// endLive prints the unended last line of a call's live output.
func (r *Renderer) endLive(callID string) {
	if l := r.partial[callID]; l != "" {
		r.Line("      │ %s", outputLine(l, 200))
	}
	delete(r.partial, callID)
}

// done prints a finished call: ✓, or ✗ with the exit status of a command
// that failed, then the tail of its output (the end is where a command
// says how it went), each line escaped; after live output, only how it
// ended; with full, the whole result.
func (r *Renderer) done(d session.ToolCallData) {
	out := strings.TrimRight(d.Result, "\n")
	mark, status := "✓", ""
	if m := failedRun().FindStringSubmatch(out); m != nil && d.Name == "run_command" {
		mark, status = "✗", " ("+m[1]+")"
		out = strings.TrimRight(out[:len(out)-len(m[0])], "\n")
	}
	lines := strings.Split(out, "\n")
	const tail = 6
	switch {
	case r.full && len(lines) == 1:
		r.Line("    %s%s %s", mark, status, Visible(out, false))
		return
	case r.full:
		r.Line("    %s%s %s of output", mark, status, count(len(lines), "line"))
		for _, l := range lines {
			r.Line("      │ %s", Visible(l, false))
		}
		return
	case r.streamed[d.ID]:
		r.Line("    %s%s %s of output (shown as they came)", mark, status, count(len(lines), "line"))
		return
	case len(lines) <= 1:
		r.Line("    %s%s %s", mark, status, outputLine(out, 200))
		return
	}
	r.Line("    %s%s %s of output%s", mark, status, count(len(lines), "line"), map[bool]string{true: ", the last " + strconv.Itoa(tail), false: ""}[len(lines) > tail])
	for _, l := range lines[max(0, len(lines)-tail):] {
		r.Line("      │ %s", outputLine(l, 200))
	}
}

// count is n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
