package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/overlay"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestSessionsShareACheckout: two sessions of one repository and commit
// are overlays of one checkout. One agent edits, removes, renames a
// directory, commits in its copy and tries to reach below it (xattrs, a
// hard link into .git, every mount it can see); the other session's copy,
// the checkout and the repository see none of it, its own git works on
// the copy's settled index, its diff shows exactly its changes, and its
// stop lets the checkout stay for the session still using it.
func TestSessionsShareACheckout(t *testing.T) {
	if err := overlay.Probe(t.TempDir()); err != nil {
		t.Skip("working copies are clones here:", err)
	}
	ctx := context.Background()
	repo := gitRepo(t)
	for _, f := range []string{"dir/b.txt", "dir/c.txt"} {
		require.NoError(t, os.MkdirAll(filepath.Join(repo, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, f), []byte(f+"\n"), 0o644))
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "dir"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	probe := `echo changed > notes.txt
rm dir/b.txt
mv dir moved && echo renamed
for x in trusted.overlay.opaque trusted.overlay.redirect; do
  /usr/bin/python3 -c "import os,sys; os.setxattr('moved', sys.argv[1], b'y')" $x 2>/dev/null && echo XATTR-SET $x || echo xattr-refused $x
done
ln .git/HEAD head-link 2>/dev/null && echo LINKED || echo link-refused
git status --porcelain
grep -c overlay /proc/self/mountinfo || true
cat /proc/self/mountinfo | grep -o 'lowerdir=[^,]*' || echo no-lower-named`
	name := unique("sharer") + ".yaml"
	require.NoError(t, os.MkdirAll(filepath.Join(sharedDir, "replay"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sharedDir, "replay", name), []byte(fmt.Sprintf(`steps:
  - text: "Probing."
    toolCalls:
      - name: run_command
        args: {command: %q}
  - text: "Done."
`, probe)), 0o600))
	sharer, idle := unique("sharer"), unique("bystander")
	applyAgent(t, sharer, "replay/"+name, "tools: [run_command]\n")
	applyAgent(t, idle, script(t, "empty.yaml"), "tools: [run_command]\n")

	b, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: idle, Repo: repo, Message: "wait"})
	require.NoError(t, err)
	a, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: sharer, Repo: repo, Message: "probe"})
	require.NoError(t, err)
	approveTurns(t, a.ID, 1, "probe")
	waitStatus(t, b.ID, session.StatusAwaiting)
	var out string
	for _, c := range finalCalls(t, api, a.ID) {
		out = c.Result + c.Error
	}
	require.Contains(t, out, "renamed", "a directory of the checkout renames (redirect_dir)")
	require.Contains(t, out, "xattr-refused trusted.overlay.opaque")
	require.Contains(t, out, "xattr-refused trusted.overlay.redirect")
	require.NotContains(t, out, "XATTR-SET")
	require.NotContains(t, out, "LINKED", "a hard link into the read-only .git")
	require.Contains(t, out, " M notes.txt", "the agent's git reads the copy")
	require.Contains(t, out, "lowerdir=/proc/self/fd/")
	require.NotContains(t, out, "checkouts", "the sandbox learns nothing of the checkout its copy shares")

	ax, err := api.Sessions().Get(ctx, a.ID)
	require.NoError(t, err)
	bx, err := api.Sessions().Get(ctx, b.ID)
	require.NoError(t, err)
	oa, ok := overlay.Load(ax.Workdir, overlay.RecordOf(ax.Workdir))
	require.True(t, ok, "session A's copy is an overlay")
	ob, ok := overlay.Load(bx.Workdir, overlay.RecordOf(bx.Workdir))
	require.True(t, ok, "session B's copy is an overlay")
	require.Equal(t, oa.Lower, ob.Lower, "one checkout for both")

	d, err := api.Review().Diff(ctx, a.ID)
	require.NoError(t, err)
	var files []string
	for _, f := range d.Files {
		files = append(files, f.Status+" "+f.Path)
	}
	require.ElementsMatch(t, []string{"modified notes.txt", "deleted dir/b.txt", "deleted dir/c.txt", "added moved/c.txt"}, files)
	d, err = api.Review().Diff(ctx, b.ID)
	require.NoError(t, err)
	require.Empty(t, d.Files, "the other session's copy is untouched")
	for _, dir := range []string{bx.Workdir, oa.Lower, repo} {
		data, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
		require.NoError(t, err)
		require.Equal(t, "some notes\n", string(data), dir)
		require.FileExists(t, filepath.Join(dir, "dir", "b.txt"))
	}

	send(t, a.ID, session.KindStop, session.StopPayload{Reason: "done"})
	waitStatus(t, a.ID, session.StatusStopped)
	waitFor(t, "session A's copy to go", func() (bool, error) { return !overlay.Mounted(ax.Workdir), nil })
	require.DirExists(t, oa.Lower, "the checkout stays for the session still using it")
	d, err = api.Review().Diff(ctx, b.ID)
	require.NoError(t, err)
	require.Empty(t, d.Files)
	// The copy goes, then its use of the checkout.
	waitFor(t, "only the live session to use the checkout", func() (bool, error) {
		entries, err := os.ReadDir(filepath.Join(filepath.Dir(oa.Lower), "users"))
		return len(entries) == 1 && entries[0].Name() == b.ID, err
	})
	send(t, b.ID, session.KindStop, session.StopPayload{Reason: "done"})
	waitStatus(t, b.ID, session.StatusStopped)
}
