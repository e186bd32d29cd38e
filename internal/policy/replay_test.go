package policy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// recorded judges calls under p the way the gate records them.
func recorded(p *Policy, session string, calls ...[2]string) []Call {
	var out []Call
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, c := range calls {
		args := json.RawMessage(c[1])
		d := p.Evaluate(c[0], args)
		out = append(out, Call{Session: session, ID: "call-" + string(rune('a'+i)), Tool: c[0], Args: args,
			At: at.Add(time.Duration(i) * time.Minute), Before: d.Verdict, BeforeRule: d.Rule})
	}
	return out
}

func cmd(c string) [2]string {
	b, _ := json.Marshal(map[string]string{"command": c})
	return [2]string{ShellTool, string(b)}
}

func TestReplay(t *testing.T) {
	old := Default()
	calls := append(recorded(old, "s1", cmd("go test ./..."), cmd("ls -la"), [2]string{"read_file", `{"path":"a"}`},
		[2]string{"edit_file", `{"path":"a"}`}), recorded(old, "s2", cmd("go test -run X ./..."), cmd("git status"), cmd("sudo id"))...)

	same := old.Replay(calls, 3)
	require.Equal(t, 7, same.Calls)
	require.Equal(t, 2, same.Sessions)
	require.Equal(t, 7, same.Unchanged)
	require.Empty(t, same.Changed, "the policy the calls were judged under changes nothing")

	tight, err := Parse([]byte(`
default: ask
tools: {read_file: ask, edit_file: exclude, run_command: ask}
commands: {allow: [ls, cat, git status]}
`))
	require.NoError(t, err)
	r := tight.Replay(calls, 1)
	var changed []string
	for _, c := range r.Changed {
		changed = append(changed, c.Session+"/"+c.ID+" "+Transition(c.Before, c.After))
	}
	require.Equal(t, []string{
		"s1/call-a allow→ask",  // go test is no longer free
		"s2/call-a allow→ask",  // go test again (oldest first; same minute, recorded order)
		"s1/call-c allow→ask",  // read_file now asks
		"s1/call-d ask→refuse", // edit_file is disabled
	}, changed)
	require.Equal(t, map[string]int{"allow→ask": 3, "ask→refuse": 1}, r.Transitions)
	require.Equal(t, 3, r.Unchanged)
	require.Equal(t, "command:unknown-command", r.Rules[0].Rule)
	require.Equal(t, 2, r.Rules[0].Count)
	require.Len(t, r.Rules[0].Examples, 1, "examples are bounded")
	require.Equal(t, "go test ./...", r.Rules[0].Examples[0].Command)
	require.Len(t, r.Rules, 3)

	loose, err := Parse([]byte("default: allow\ncommands: {allow: [ls, go test, git status, make]}\n"))
	require.NoError(t, err)
	r = loose.Replay(calls, 3)
	require.Equal(t, map[string]int{"ask→allow": 1}, r.Transitions, "edit_file becomes free; sudo stays refused")
	require.Equal(t, shellcheck.Allow, r.Changed[0].After)
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":           {},
		"7d":         now.Add(-7 * 24 * time.Hour),
		"12h":        now.Add(-12 * time.Hour),
		"2026-03-01": time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseSince("a week", now)
	require.Error(t, err)
}
