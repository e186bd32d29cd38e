package sandbox

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func median(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkSandbox is one command (true) through the Paddock sandbox.
func BenchmarkSandbox(b *testing.B) {
	dir := b.TempDir()
	_ = syscall.Chown(dir, box.UID, box.GID)
	_ = syscall.Chmod(filepath.Dir(dir), 0o755)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := box.Run(context.Background(), Command{Place: Place{Workdir: dir}, Script: "true", Stdout: io.Discard, Stderr: io.Discard})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		lat = append(lat, time.Since(start))
	}
	median(b, lat)
}

// BenchmarkBareBwrap is the same bwrap invocation without Paddock.
func BenchmarkBareBwrap(b *testing.B) {
	dir := b.TempDir()
	_ = syscall.Chown(dir, box.UID, box.GID)
	_ = syscall.Chmod(filepath.Dir(dir), 0o755)
	args, err := box.Args(Place{Workdir: dir})
	if err != nil {
		b.Fatal(err)
	}
	args = append(args, "--", "/bin/bash", "--noprofile", "--norc", "-c", "true")
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(box.Path, args...)
		if currentUID() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(box.UID), Gid: uint32(box.GID), Groups: []uint32{}}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		lat = append(lat, time.Since(start))
	}
	median(b, lat)
}

// BenchmarkPlainExec is bash -c true without any sandbox.
func BenchmarkPlainExec(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	median(b, lat)
}

// BenchmarkOverhead alternates one command through the Paddock sandbox
// (view, masks, cgroups with CPU, memory and process limits, launcher,
// capped output, cleanup) and the same bwrap invocation bare, so the ratio
// of their medians comes from one run on one machine state.
func BenchmarkOverhead(b *testing.B) {
	dir := b.TempDir()
	_ = syscall.Chown(dir, box.UID, box.GID)
	_ = syscall.Chmod(filepath.Dir(dir), 0o755)
	args, err := box.Args(Place{Workdir: dir})
	if err != nil {
		b.Fatal(err)
	}
	args = append(args, "--", "/bin/bash", "--noprofile", "--norc", "-c", "true")
	var paddock, bare []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := box.Run(context.Background(), Command{Place: Place{Workdir: dir}, Script: "true", Stdout: io.Discard, Stderr: io.Discard})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		paddock = append(paddock, time.Since(start))
		start = time.Now()
		cmd := exec.Command(box.Path, args...)
		if currentUID() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(box.UID), Gid: uint32(box.GID), Groups: []uint32{}}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		bare = append(bare, time.Since(start))
	}
	slices.Sort(paddock)
	slices.Sort(bare)
	p, q := paddock[len(paddock)/2], bare[len(bare)/2]
	b.ReportMetric(float64(p.Microseconds())/1000, "paddock-p50-ms")
	b.ReportMetric(float64(q.Microseconds())/1000, "bare-p50-ms")
	b.ReportMetric(float64(p)/float64(q), "ratio")
}
