package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// manyFiles writes n small files under dir/gen, as a command in the
// sandbox would (the attack made 150,000 in 6 s).
func manyFiles(t testing.TB, dir string, n int) {
	t.Helper()
	for i := range n {
		sub := filepath.Join(dir, "gen", fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			require.NoError(t, os.MkdirAll(sub, 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint(i)), 0o644))
	}
}

// BenchmarkCaptureManyFiles is the host's work after each call on a copy
// holding 150,000 files the session created: the first checkpoint hashes
// them all; each later one re-reads only what changed.
func BenchmarkCaptureManyFiles(b *testing.B) {
	ctx := context.Background()
	src, base := repo(b)
	work := b.TempDir()
	require.NoError(b, Clone(ctx, src, work))
	manyFiles(b, work, 150_000)
	start := time.Now()
	_, err := Capture(ctx, work, base)
	if err != nil && err != ErrCheckpointTooLarge {
		b.Fatal(err)
	}
	b.Logf("first checkpoint: %s", time.Since(start))
	for b.Loop() {
		require.NoError(b, os.WriteFile(filepath.Join(work, "main.go"), []byte(fmt.Sprint("package main // ", time.Now().UnixNano())), 0o644))
		if _, err := Capture(ctx, work, base); err != nil && err != ErrCheckpointTooLarge {
			b.Fatal(err)
		}
	}
}

// childCPU is the processor time this process's waited-for children used.
func childCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The attack: a command made 150,000 files in the copy, and every later
// call cost 15-18 s of wall time and ~8 s of the host's processor, because
// each checkpoint hashed every file again into a fresh index. The private
// index is now kept: after the first checkpoint, one re-reads only what
// changed. Measured here in the processor time of the host's git (20,000
// files keep the test short; the ratio holds at any size).
func TestCheckpointsDoNotRehashTheCopy(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	work := t.TempDir()
	require.NoError(t, Clone(ctx, src, work))
	manyFiles(t, work, 20_000)
	capture := func() time.Duration {
		before := childCPU(t)
		_, err := Capture(ctx, work, base)
		if err != nil {
			require.ErrorIs(t, err, ErrCheckpointTooLarge)
		}
		return childCPU(t) - before
	}
	first := capture() // every file hashed and written
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.go"), []byte("package main // changed\n"), 0o644))
	kept := capture()
	// What every checkpoint cost before: a fresh index, every file hashed
	// again (their objects exist by now, so none is written).
	require.NoError(t, os.Remove(filepath.Join(work, ".git", indexName)))
	fresh := capture()
	t.Logf("host git CPU: first checkpoint %s, then %s with the kept index, %s with a fresh one", first, kept, fresh)
	require.Less(t, kept*2, fresh, "a checkpoint with the kept index costs the host as much as hashing the copy again")

	// Control: what changed is still seen.
	d, err := Compute(ctx, work, base)
	require.NoError(t, err)
	require.Contains(t, d.Patch, "package main // changed")
}
