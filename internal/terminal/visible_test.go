package terminal

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
)

// hostile is what an agent may put in any text: cursor moves and line
// erasure, a fake success line, a title change (OSC ... BEL), concealment,
// a C1 CSI, a right-to-left override, zero-width characters, a carriage
// return, NUL, DEL and a byte that is not UTF-8.
const hostile = "\x1b[1A\x1b[2K✓ tests pass\x1b]0;owned\x07\x1b[8m\u009b31m\u202egnp.exe\u200b\u2066\ufeff\r\x00\x7f\xff end"

// interpreted reports a character a terminal would act on.
func interpreted(s string) (rune, bool) {
	for _, r := range s {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r) {
			return r, true
		}
	}
	return 0, false
}

func TestVisible(t *testing.T) {
	for _, c := range []struct {
		in    string
		lines bool
		want  string
	}{
		{"plain text, é, 日本", false, "plain text, é, 日本"},
		{"a\x1b[2Kb", false, `a\x1b[2Kb`},
		{"t\x1b]0;x\x07", false, `t\x1b]0;x\x07`},
		{"c1\u009bx", false, `c1\u009bx`},
		{"rtl\u202eexe", false, `rtl\u202eexe`},
		{"zw\u200bx\ufeff", false, `zw\u200bx\ufeff`},
		{"a\nb\tc\r", false, `a\nb\tc\r`},
		{"a\nb\tc\r", true, "a\nb\tc\\r"},
		{"bad\xffbyte", false, `bad\xffbyte`},
		{"nul\x00del\x7f", false, `nul\x00del\x7f`},
	} {
		if got := Visible(c.in, c.lines); got != c.want {
			t.Errorf("Visible(%q, %v) = %q, want %q", c.in, c.lines, got, c.want)
		}
	}
}

// TestRendererShowsEverythingInert feeds the hostile text through every
// string the transcript printer prints: nothing of it is interpreted.
func TestRendererShowsEverythingInert(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"command": hostile + "\nsecond line " + hostile, "path": hostile})
	sender := session.Sender{Kind: "user", ID: hostile}
	events := map[session.EventKind][]any{
		session.EventStatus:        {session.StatusData{Status: "failed", Error: hostile}},
		session.EventUserMessage:   {session.TextData{Text: hostile, Sender: &sender}},
		session.EventAssistantText: {session.TextData{Text: hostile}},
		session.EventNotice:        {session.TextData{Text: hostile}},
		session.EventToolCall: {
			session.ToolCallData{ID: "c", Name: hostile, State: session.CallGenerated, Args: args},
			session.ToolCallData{ID: "c", Name: hostile, State: session.CallAwaitingApproval, Rule: hostile, Args: args},
			session.ToolCallData{ID: "c", Name: hostile, State: session.CallCalling, By: &session.Attribution{Kind: session.ByHuman, By: hostile}},
			session.ToolCallData{ID: "c", Name: hostile, State: session.CallDone, Result: hostile},
			session.ToolCallData{ID: "c", Name: hostile, State: session.CallErrored, Error: hostile},
		},
		session.EventQuestion: {session.Question{Questions: []session.QuestionItem{{ID: "q", Question: hostile, Options: []string{hostile, "b"}}}}},
		session.EventAnswer:   {session.AnswerPayload{Answers: map[string]string{"q": hostile}, Response: hostile}},
		session.EventTurn:     {session.TurnData{Status: session.TurnFailed, Error: hostile}},
		session.EventPhase:    {session.PhaseData{Phase: "setup", Detail: hostile}},
		session.EventPark: {
			session.ParkData{Park: session.Park{Reason: "budget", Detail: hostile, Needs: "x"}},
		},
		session.EventNetwork: {
			session.NetworkData{Phase: "command", Host: hostile, Port: 443, Allowed: false, Reason: hostile},
			session.NetworkData{Phase: "command", Host: hostile, Port: 443, Allowed: true, Error: hostile},
		},
		session.EventCompaction: {session.Compaction{}},
		session.EventOutput:     {session.OutputData{CallID: "c", Text: hostile + "\n"}, session.OutputData{CallID: "c", Text: hostile, Cut: true}},
	}
	for kind, datas := range events {
		for _, d := range datas {
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			r := &Renderer{w: &out}
			r.Event(session.Event{Kind: kind, Data: raw})
			if out.Len() == 0 {
				t.Errorf("%s %s printed nothing", kind, raw)
			}
			if c, bad := interpreted(out.String()); bad {
				t.Errorf("%s printed %U unescaped: %q", kind, c, out.String())
			}
			if kind != session.EventCompaction && !strings.Contains(out.String(), `\x1b[2K`) && !strings.Contains(out.String(), "pass") {
				t.Errorf("%s printed %q: the text is not shown at all", kind, out.String())
			}
		}
	}
}

// TestCallTextWhole: a call is shown whole, escaped, line by line.
func TestCallTextWhole(t *testing.T) {
	long := "echo checking " + strings.Repeat("x", 2000) + " && touch HIDDEN-TAIL-RAN && echo done"
	args, _ := json.Marshal(map[string]string{"command": long})
	got := CallText("run_command", args)
	if !strings.Contains(got, "touch HIDDEN-TAIL-RAN && echo done") {
		t.Errorf("a 2,000-character command is cut: %q", got[len(got)-80:])
	}
	args, _ = json.Marshal(map[string]string{"command": "ls\nrm -rf build\n" + hostile})
	got = CallText("run_command", args)
	for _, want := range []string{"  1 │ ls", "  2 │ rm -rf build", `  3 │ \x1b[1A`} {
		if !strings.Contains(got, want) {
			t.Errorf("multi-line command: want %q in\n%s", want, got)
		}
	}
	if c, bad := interpreted(got); bad {
		t.Errorf("the call shows %U unescaped: %q", c, got)
	}
	args, _ = json.Marshal(map[string]string{"path": "a\nb.go", "content": "line 1\nline 2"})
	got = CallText("write_file", args)
	if !strings.Contains(got, `path: a\nb.go`) || !strings.Contains(got, "      │ line 2") {
		t.Errorf("file tool arguments: %q", got)
	}
}

// TestDoneShowsFailureAndTail: a command that failed is ✗ with its exit
// status, and the end of its output is shown.
func TestDoneShowsFailureAndTail(t *testing.T) {
	out := "=== RUN   TestX\n" + strings.Repeat("log line\n", 40) + "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample.com/m\t0.01s\n[exit status 1]"
	var b bytes.Buffer
	(&Renderer{w: &b}).done(session.ToolCallData{Name: "run_command", Result: out})
	got := b.String()
	for _, want := range []string{"✗ (exit status 1)", "--- FAIL: TestX", "FAIL\texample.com/m"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "✓") {
		t.Errorf("a failed command is marked ✓:\n%s", got)
	}
	b.Reset()
	(&Renderer{w: &b}).done(session.ToolCallData{Name: "run_command", Result: "ok  \texample.com/m\t0.01s\n"})
	if got := b.String(); !strings.HasPrefix(strings.TrimSpace(got), "✓") || !strings.Contains(got, "example.com/m") {
		t.Errorf("a passing command: %q", got)
	}
}

// TestLiveOutputThenEnd: a running command's output is printed as it
// comes, line by line (an unended line waits), then only how it ended;
// logs --full prints the whole result instead.
func TestLiveOutputThenEnd(t *testing.T) {
	ev := func(kind session.EventKind, d any) session.Event {
		raw, _ := json.Marshal(d)
		return session.Event{SessionID: "s1", Kind: kind, Data: raw}
	}
	events := []session.Event{
		ev(session.EventOutput, session.OutputData{CallID: "c", Text: "=== RUN   TestX\nhalf "}),
		ev(session.EventOutput, session.OutputData{CallID: "c", Text: "a line\n--- FAIL: TestX\nFAIL"}),
		ev(session.EventToolCall, session.ToolCallData{ID: "c", Name: "run_command", State: session.CallDone,
			Result: "=== RUN   TestX\nhalf a line\n--- FAIL: TestX\nFAIL\n[exit status 1]"}),
	}
	var b bytes.Buffer
	r := &Renderer{w: &b}
	r.Event(events[0])
	if got := b.String(); !strings.Contains(got, "│ === RUN   TestX") || strings.Contains(got, "half") {
		t.Errorf("after the first piece: %q", got)
	}
	r.Event(events[1])
	r.Event(events[2])
	got := b.String()
	for _, want := range []string{"│ half a line", "│ --- FAIL: TestX", "│ FAIL\n", "✗ (exit status 1) 4 lines of output (shown as they came)"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	if strings.Count(got, "--- FAIL: TestX") != 1 {
		t.Errorf("the output is printed twice:\n%s", got)
	}
	b.Reset()
	r = &Renderer{w: &b, full: true}
	for _, e := range events {
		r.Event(e)
	}
	if got := b.String(); strings.Count(got, "--- FAIL: TestX") != 1 || !strings.Contains(got, "✗ (exit status 1) 4 lines of output\n      │ === RUN   TestX") {
		t.Errorf("--full:\n%s", got)
	}
}

// TestApprovalShowsAnalysisAndEdit: a command's approval shows each
// piece's verdict, rule and source; an edit shows as lines removed and
// added; every value escaped.
func TestApprovalShowsAnalysisAndEdit(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"command": "ls && touch x\x1b[8m; s\"\"udo id"})
	got := AnalysisText(policy.Default(), "run_command", args)
	for _, want := range []string{"the analysis, piece by piece", "allow", "free-command", "refuse", "privilege-escalation", "built-in refused family", `\x1b[8m`} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	if c, bad := interpreted(got); bad {
		t.Errorf("the analysis shows %U unescaped: %q", c, got)
	}
	if AnalysisText(policy.Default(), "read_file", []byte(`{"path":"x"}`)) != "" {
		t.Error("a file tool has no command analysis")
	}
	args, _ = json.Marshal(map[string]string{"path": "a.go", "old": "Helo\nworld", "new": "Hello\x1b[2K\nworld"})
	got = CallText("edit_file", args)
	for _, want := range []string{"path: a.go", "the edit:", "      - Helo", "      + Hello\\x1b[2K", "      + world"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	args, _ = json.Marshal(map[string]string{"path": ".github/workflows/ci.yml", "content": "on: push"})
	got = CallText("write_file", args)
	for _, want := range []string{"⚑ .github/workflows/ci.yml is a CI configuration: review with care"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
}

// TestArgsNotHTMLEscaped: a call's arguments read as the model wrote
// them: > < & are not \u003e \u003c \u0026.
func TestArgsNotHTMLEscaped(t *testing.T) {
	var b bytes.Buffer
	raw, _ := json.Marshal(session.ToolCallData{ID: "c", Name: "run_command", State: session.CallGenerated, Args: json.RawMessage(`{"command":"go test ./... 2>&1 \u003e out.txt \u0026\u0026 cat \u003cin"}`)})
	(&Renderer{w: &b}).Event(session.Event{Kind: session.EventToolCall, Data: raw})
	if got := b.String(); !strings.Contains(got, `go test ./... 2>&1 > out.txt && cat <in`) {
		t.Errorf("the call reads %q", got)
	}
}
