package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/volume"
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

// goModule writes a small Go module of three packages, each with a test,
// at dir.
func goModule(b *testing.B, dir string) {
	files := map[string]string{"go.mod": "module bench\n\ngo 1.22\n"}
	for _, p := range []string{"a", "b", "c"} {
		files[p+"/"+p+".go"] = "package " + p + "\n\nimport \"strings\"\n\n// Up shouts.\nfunc Up(s string) string { return strings.ToUpper(s) + \"!\" }\n"
		files[p+"/"+p+"_test.go"] = "package " + p + "\n\nimport \"testing\"\n\nfunc TestUp(t *testing.T) {\n\tif Up(\"a\") != \"A!\" {\n\t\tt.Fatal(Up(\"a\"))\n\t}\n}\n"
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoTest is `go test ./...` run again on a module whose build
// cache is warm: directly, and as a session's second command in the
// sandbox (its working copy and build cache in the session's volume
// where this machine makes volumes: fuse2fs for a user other than root).
// Workstation mode promises the sandboxed run within 20% of the direct one.
func BenchmarkGoTest(b *testing.B) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no Go toolchain")
	}
	b.Run("direct", func(b *testing.B) {
		dir := b.TempDir()
		goModule(b, filepath.Join(dir, "m"))
		env := []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + dir, "GOCACHE=" + filepath.Join(dir, "cache"),
			"GOPATH=" + filepath.Join(dir, "gopath"), "GOTOOLCHAIN=local", "GOFLAGS="}
		run := func() {
			cmd := exec.Command(goBin, "test", "./...")
			cmd.Dir, cmd.Env = filepath.Join(dir, "m"), env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
		run() // the first command fills the cache
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			run()
			lat = append(lat, time.Since(start))
		}
		median(b, lat)
	})
	for _, cpus := range []float64{box.MaxCPUs, float64(runtime.NumCPU())} {
		b.Run(fmt.Sprintf("sandbox-%gcpu", cpus), func(b *testing.B) {
			defer func(was float64) { box.MaxCPUs = was }(box.MaxCPUs)
			box.MaxCPUs = cpus
			sandboxGoTest(b)
		})
	}
}

// sandboxGoTest is BenchmarkGoTest's sandboxed side.
func sandboxGoTest(b *testing.B) {
	{
		root := b.TempDir()
		_ = os.Chmod(root, 0o711)
		_ = os.Chmod(filepath.Dir(root), 0o711)
		work, cache := filepath.Join(root, "work"), filepath.Join(root, "cache")
		if currentUID() != 0 && volume.Probe() == nil {
			home, _ := os.UserHomeDir() // what a workstation lends, as there
			v := &volume.Volumes{Dir: filepath.Join(root, "volumes"), Size: 1 << 30, Lend: Lend(os.Getenv, home).Caches()}
			mnt, err := v.Ensure(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = v.Remove(context.Background(), "bench") })
			work = filepath.Join(mnt, "work")
			var served bool
			if cache, served = v.Cache("bench"); !served { // cachefs, in front of the volume
				b.Fatal("the volume's build cache is not served")
			}
		}
		goModule(b, work)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			b.Fatal(err)
		}
		if currentUID() == 0 {
			for _, d := range []string{work, cache} {
				_ = filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, box.UID, box.GID) })
			}
		}
		run := func() {
			var out strings.Builder
			res, err := box.Run(context.Background(), Command{Place: Place{Workdir: work, Cache: cache}, Script: "go test ./...", Stdout: &out, Stderr: &out, Timeout: 5 * time.Minute})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(err, res.ExitCode, out.String())
			}
		}
		run()
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			run()
			lat = append(lat, time.Since(start))
		}
		median(b, lat)
	}
}
