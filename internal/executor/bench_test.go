package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// tree writes n files of size bytes in directories of 100.
func tree(b *testing.B, dir string, n, size int) {
	b.Helper()
	body := strings.Repeat("x", size)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d/f%05d.go", i/100, i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, []byte(body), 0o644))
	}
}

// BenchmarkTransfer measures what one command in a pod costs beyond the
// command, on a copy of 2,000 files of 4 KiB: the first push (the whole
// copy), a push with nothing changed (both manifests compared), and the
// pull after a command changed 10 files.
func BenchmarkTransfer(b *testing.B) {
	pool, cert := authority(b)
	ctx := context.Background()
	host := b.TempDir()
	tree(b, host, 2000, 4096)
	root, err := os.OpenRoot(host)
	require.NoError(b, err)
	defer root.Close()

	b.Run("first-push", func(b *testing.B) {
		pod := b.TempDir()
		addr := serve(b, pool, pod)
		for b.Loop() {
			b.StopTimer()
			require.NoError(b, os.RemoveAll(filepath.Join(pod, "work")))
			require.NoError(b, os.Mkdir(filepath.Join(pod, "work"), 0o700))
			c := Dial(addr, cert, "")
			b.StartTimer()
			t, err := c.Push(ctx, Work, root)
			require.NoError(b, err)
			require.Equal(b, 2020, t.Written)
			c.Close()
		}
	})
	c := Dial(serve(b, pool, b.TempDir()), cert, "")
	defer c.Close()
	_, err = c.Push(ctx, Work, root)
	require.NoError(b, err)
	b.Run("unchanged-push", func(b *testing.B) {
		for b.Loop() {
			t, err := c.Push(ctx, Work, root)
			require.NoError(b, err)
			require.Zero(b, t.Written)
		}
	})
	b.Run("pull-10-changed", func(b *testing.B) {
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			_, err := c.Run(ctx, sandbox.Command{Script: fmt.Sprintf("for f in d000/f0000[0-9].go; do echo %d >> $f; done", i)}, nil)
			require.NoError(b, err)
			b.StartTimer()
			t, err := c.Pull(ctx, Work, Into{Root: root, UID: -1, Limit: 1 << 30})
			require.NoError(b, err)
			require.Equal(b, 10, t.Written)
		}
	})
}
