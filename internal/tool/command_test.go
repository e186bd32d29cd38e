package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/volume"
)

// TestBudgetsAreTold: a command that fills the session's volume, with
// bytes or with files (the attack filled a copy with 150,000 files so
// that the host's work on it after every call took seconds), is refused
// by the kernel, and the result tells the model which budget ran out.
func TestBudgetsAreTold(t *testing.T) {
	if err := volume.Probe(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	box, err := sandbox.NewBwrap()
	if err == nil {
		err = box.Probe(ctx)
	}
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(box.Close)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o711))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711)) // t.TempDir's parent is private
	v := &volume.Volumes{Dir: filepath.Join(dir, "volumes"), Size: 64 << 20, Files: 1500, UID: box.UID}
	require.NoError(t, os.MkdirAll(v.Dir, 0o711))

	run := func(id, script string) string {
		mnt, err := v.Ensure(ctx, id)
		require.NoError(t, err)
		t.Cleanup(func() { _ = v.Remove(ctx, id) })
		env := Env{Root: mnt, Shell: box, Place: sandbox.Place{Workdir: mnt}, DiskBudget: v.Size}
		args, _ := json.Marshal(map[string]string{"command": script})
		res, err := Builtin()[RunCommand].Run(ctx, env, args)
		require.NoError(t, err)
		return res.Output
	}
	out := run("files", `i=0; while [ $i -lt 3000 ]; do : > f$i || break; i=$((i+1)); done; echo made $i`)
	require.Contains(t, out, "No space left on device")
	require.Contains(t, out, "the session's file budget")
	require.NotContains(t, out, "made 3000")

	out = run("bytes", `head -c 80000000 /dev/zero > big; echo done`)
	require.Contains(t, out, "the session's disk budget (64 MiB")

	out = run("control", `i=0; while [ $i -lt 500 ]; do : > f$i || break; i=$((i+1)); done; echo made $i`)
	require.Contains(t, out, "made 500")
	require.NotContains(t, out, "budget")
}
