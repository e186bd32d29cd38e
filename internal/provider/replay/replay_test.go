package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
)

func TestReplayPlaysStepsByConversationPosition(t *testing.T) {
	p, err := Factory("demo")
	require.NoError(t, err)
	var deltas []provider.Delta
	resp, err := p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}},
		func(d provider.Delta) { deltas = append(deltas, d) })
	require.NoError(t, err)
	require.Equal(t, "list_dir", resp.ToolCalls[0].Name)
	require.JSONEq(t, `{"path":"."}`, string(resp.ToolCalls[0].Args))
	var text, args strings.Builder
	for _, d := range deltas {
		switch d.Kind {
		case provider.DeltaText:
			text.WriteString(d.Text)
		case provider.DeltaToolArgs:
			args.WriteString(d.Text)
		}
	}
	require.Equal(t, resp.Text, text.String(), "streamed text adds up to the response")
	require.Equal(t, string(resp.ToolCalls[0].Args), args.String(), "argument fragments add up to the arguments")

	// The second call plays the second step; past the end, a clear reply.
	resp, err = p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleAssistant}}}, func(provider.Delta) {})
	require.NoError(t, err)
	require.Equal(t, "read_file", resp.ToolCalls[0].Name)
	resp, err = p.Stream(context.Background(), provider.Request{Messages: make([]provider.Message, 0)}, func(provider.Delta) {})
	require.NoError(t, err)
	many := make([]provider.Message, 50)
	for i := range many {
		many[i].Role = provider.RoleAssistant
	}
	resp, err = p.Stream(context.Background(), provider.Request{Messages: many}, func(provider.Delta) {})
	require.NoError(t, err)
	require.Contains(t, resp.Text, "no more steps")
}

func TestReplayScriptErrors(t *testing.T) {
	_, err := Factory("no-such-script")
	require.ErrorContains(t, err, "no built-in script")
	_, err = Parse([]byte("steps:\n  - text: hi\n    bogus: 1\n"))
	require.ErrorContains(t, err, "bogus")
	_, err = Parse([]byte("steps:\n  - delay: soon\n"))
	require.ErrorContains(t, err, "steps[0].delay")
	_, err = Parse([]byte("steps:\n  - toolCalls: [{args: {}}]\n"))
	require.ErrorContains(t, err, "name: required")
}

func TestReplayDelayHonorsCancel(t *testing.T) {
	s, err := Parse([]byte("steps:\n  - text: late\n    delay: 1h\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&Provider{script: s}).Stream(ctx, provider.Request{}, func(provider.Delta) {})
	require.ErrorIs(t, err, context.Canceled)
}

func TestReplayReadsOnlyItsFolders(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	secret := "root:SECRET-CONTENT:0:0"
	require.NoError(t, os.WriteFile(filepath.Join(outside, "shadow"), []byte(secret+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "script.yaml"), []byte("steps: [{text: hi}]\n"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(outside, "script.yaml"), filepath.Join(dir, "link.yaml")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(secret+"\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "team"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team", "ok.yaml"), []byte("steps: [{text: hi}]\n"), 0o600))
	f := Dir(dir)
	for _, name := range []string{
		"../../../../etc/shadow", "../" + filepath.Base(outside) + "/shadow", outside + "/shadow", "/etc/passwd",
		"team/../../x", ".hidden", "team//ok", "link", "bad", "a\x00b", strings.Repeat("a", 300),
	} {
		_, err := f(name)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), "SECRET", name)
		require.NotContains(t, err.Error(), "root:", name)
	}
	for _, name := range []string{"demo", "demo.yaml", "team/ok", "team/ok.yaml"} {
		_, err := f(name)
		require.NoError(t, err, name)
	}
	_, err := Factory("team/ok")
	require.Error(t, err, "without a folder only the built-in scripts play")
}
