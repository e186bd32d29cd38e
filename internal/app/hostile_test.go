package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestPlantedCodeNeverRunsOnTheHost: an agent uses its sandboxed commands
// to plant everything that could make host-side git run a program —
// fsmonitor and hooks in the empty submodule directory and in a nested
// repository, filter and diff drivers named by .gitattributes, a named
// pipe — and then the host reads the copy every way it does: the search
// tool, the diff (run summary and `sessions diff`), accept, reject, stop
// and collection. The planted program writes a marker the sandbox itself
// cannot write; it never appears.
func TestPlantedCodeNeverRunsOnTheHost(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the host-side reads that would run planted code run as root here")
	}
	ctx := context.Background()
	marker := fmt.Sprintf("/var/tmp/paddock-pwned-%d", time.Now().UnixNano())
	t.Cleanup(func() { os.Remove(marker) })

	sub := gitRepo(t)
	repo := gitRepo(t)
	for _, args := range [][]string{{"-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "vendor/sub"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "add a submodule"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	plant := fmt.Sprintf(`set -e
printf '#!/bin/sh\ntouch %[1]s\ncat\n' > hook.sh; chmod +x hook.sh
mkdir -p hooks evil
for h in pre-commit post-checkout reference-transaction post-index-change; do cp hook.sh hooks/$h; done
for r in vendor/sub evil; do
  git -C $r init -q
  git -C $r config core.fsmonitor "$PWD/hook.sh"
  git -C $r config core.hooksPath "$PWD/hooks"
  git -C $r config filter.evil.clean "$PWD/hook.sh"
  git -C $r config diff.evil.textconv "$PWD/hook.sh"
  git -C $r config diff.external "$PWD/hook.sh"
  printf 'x\n' > $r/file.txt
done
printf '* filter=evil diff=evil\n' > .gitattributes
mkfifo pipe
echo "the agent was here" >> notes.txt
touch %[1]s 2>/dev/null && echo MARKER-WRITABLE-IN-SANDBOX || echo planted`, marker)
	name := "hostile.yaml"
	require.NoError(t, os.MkdirAll(filepath.Join(sharedDir, "replay"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sharedDir, "replay", name), []byte(fmt.Sprintf(`steps:
  - text: "Planting."
    toolCalls:
      - name: run_command
        args: {command: %q}
      - name: search
        args: {pattern: "agent was here"}
      - name: read_file
        args: {path: pipe}
      - name: write_file
        args: {path: vendor/sub/.git/config, content: "[core]\n\tfsmonitor = /bin/true\n"}
  - text: "Done."
  - text: "More."
`, plant)), 0o600))
	applyAgent(t, "planter", "replay/"+name, "tools: [run_command, search, read_file, write_file]\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: "planter", Repo: repo, Message: "go"})
	require.NoError(t, err)
	approveTurns(t, x.ID, 1, "let it plant") // the planting command is not free: a person approves it
	final := finalCalls(t, api, x.ID)
	var results []string
	for _, c := range final {
		results = append(results, string(c.State)+": "+c.Result+c.Error)
	}
	require.Len(t, final, 4, "%v", results)
	require.Contains(t, fmt.Sprint(results), "planted", "the command ran in the sandbox")
	require.NotContains(t, fmt.Sprint(results), "MARKER-WRITABLE-IN-SANDBOX")
	require.Contains(t, fmt.Sprint(results), "notes.txt", "the search found the change")
	require.Contains(t, fmt.Sprint(results), "not a regular file", "the pipe is refused, not opened")
	require.Contains(t, fmt.Sprint(results), "inside a .git directory", "file tools never write a .git")

	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.NotEmpty(t, d.Files)
	code, out := paddock(t, "sessions", "diff", x.ID)
	require.Equal(t, 0, code, out)
	// Accept into the user's repository with the user's git; then the
	// agent's further writes are rejected; then stop and collection.
	code, out = paddock(t, "sessions", "accept", x.ID, "--uncommitted")
	require.Equal(t, 0, code, out)
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "more"})
	waitFor(t, "the second turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status.Settled(), err
	})
	code, out = paddock(t, "sessions", "reject", x.ID)
	require.Equal(t, 0, code, out)
	send(t, x.ID, session.KindStop, session.StopPayload{Reason: "done"})
	waitStatus(t, x.ID, session.StatusStopped)
	_, err = api.Review().GC(ctx)
	require.NoError(t, err)

	require.NoFileExists(t, marker, "code planted in the working copy ran on the host")
}
