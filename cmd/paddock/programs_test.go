package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// buildPrograms builds paddock and paddock-server into dir, as a person
// installs them.
func buildPrograms(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	args := append([]string{"build", "-o", dir + "/"}, pkgs...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// TestClientAndServerPrograms runs the two programs as built: the client
// runs the server program beside it for serve and migrate and starts it
// as the background server; alone, it says what is missing.
func TestClientAndServerPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both programs")
	}
	work := t.TempDir()
	bin, alone := filepath.Join(work, "bin"), filepath.Join(work, "alone")
	buildPrograms(t, bin, "../paddock", "../paddock-server")
	buildPrograms(t, alone, "../paddock")
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "PADDOCK_DATA_DIR=" + filepath.Join(home, ".paddock"),
		"PADDOCK_LOG_LEVEL=warn", "TMPDIR=" + work, "XDG_RUNTIME_DIR="}
	run := func(program string, args ...string) (string, error) {
		cmd := exec.Command(program, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	paddock := filepath.Join(bin, "paddock")
	t.Cleanup(func() { _, _ = run(paddock, "server", "stop") })

	if out, err := run(paddock, "version"); err != nil || !strings.HasPrefix(out, "paddock ") {
		t.Fatalf("paddock version: %v\n%s", err, out)
	}
	// serve's help comes from the server program, which the client ran
	// in its place with the arguments as given.
	out, err := run(paddock, "serve", "--help")
	if err != nil || !strings.Contains(out, "--idle-exit") || !strings.Contains(out, "embedded Temporal server") {
		t.Fatalf("paddock serve --help: %v\n%s", err, out)
	}
	out, err = run(paddock, "migrate")
	if err != nil || !strings.Contains(out, "schema version") {
		t.Fatalf("paddock migrate: %v\n%s", err, out)
	}
	start := time.Now()
	out, err = run(paddock, "sessions", "ls")
	if err != nil || !strings.Contains(out, "started a background paddock server") {
		t.Fatalf("paddock sessions ls: %v\n%s", err, out)
	}
	t.Logf("the first command, starting paddock-server in the background, took %s", time.Since(start).Round(time.Millisecond))
	out, err = run(paddock, "server", "status")
	if err != nil || !strings.Contains(out, "a background paddock server") {
		t.Fatalf("paddock server status: %v\n%s", err, out)
	}
	if out, err = run(paddock, "server", "stop"); err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("paddock server stop: %v\n%s", err, out)
	}

	// The client alone, on a new data directory: every command needing
	// a server says what to do.
	env[2] = "PADDOCK_DATA_DIR=" + filepath.Join(home, "alone")
	lone := filepath.Join(alone, "paddock")
	for _, args := range [][]string{{"serve"}, {"sessions", "ls"}} {
		out, err := run(lone, args...)
		if err == nil || !strings.Contains(out, "paddock-server, the program that runs Paddock's server, is neither next to paddock nor on PATH") ||
			!strings.Contains(out, "go build -o DIR ./cmd/paddock ./cmd/paddock-server") {
			t.Errorf("paddock %s without paddock-server: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// What needs no server still works.
	if out, err := run(lone, "policy", "check", "--", "ls", "-la"); err != nil || !strings.Contains(out, "allow") {
		t.Errorf("paddock policy check without paddock-server: %v\n%s", err, out)
	}
}

// BenchmarkClient times whole processes of the client as released
// (stripped): paddock version, and paddock sandbox exec -- true against
// the same bubblewrap invocation bare (Paddock's view flags, no Paddock),
// interleaved so the machine's drift falls on all three alike. (Its
// peak memory is farm-bench's to measure: a child's ru_maxrss keeps the
// test binary's, which it was forked from.)
func BenchmarkClient(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("sandbox exec's bare comparison runs bwrap as root, as the sandbox user")
	}
	dir := b.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", dir+"/", ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as released: static, no dynamic loader at start
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(dir, "paddock"))
	if err != nil {
		b.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil || os.Chmod(filepath.Dir(dir), 0o711) != nil || os.Chmod(dir, 0o755) != nil || os.Chown(work, sandbox.DefaultUID, sandbox.DefaultUID) != nil {
		b.Fatal("work directory", err)
	}
	box, err := sandbox.NewBwrap()
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	bare, err := box.Args(sandbox.Place{Workdir: work})
	if err != nil {
		b.Fatal(err)
	}
	bare = append(bare, "--", "/bin/bash", "--noprofile", "--norc", "-c", "true")
	env := []string{"HOME=" + dir, "PATH=/usr/local/bin:/usr/bin:/bin", "PADDOCK_DATA_DIR=" + filepath.Join(dir, "data")}
	timed := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		if name == box.Path {
			// As the sandbox user, as Paddock runs it (root's bubblewrap
			// skips the user namespace's mapping a user's pays for).
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: sandbox.DefaultUID, Gid: sandbox.DefaultUID, Groups: []uint32{}}}
		}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return time.Since(start)
	}
	paddock := filepath.Join(dir, "paddock")
	var version, exec_, bwrap []time.Duration
	b.ResetTimer()
	for range b.N {
		version = append(version, timed(paddock, "version"))
		exec_ = append(exec_, timed(paddock, "sandbox", "exec", "--workdir", work, "--", "true"))
		bwrap = append(bwrap, timed(box.Path, bare...))
	}
	b.StopTimer()
	ms := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	v, e, w := ms(version), ms(exec_), ms(bwrap)
	b.ReportMetric(v, "version-p50-ms")
	b.ReportMetric(e, "exec-p50-ms")
	b.ReportMetric(w, "bwrap-p50-ms")
	b.ReportMetric(e/w, "exec/bwrap")
	b.ReportMetric(float64(fi.Size())/(1<<20), "binary-MiB")
	b.ReportMetric(0, "ns/op")
}
