package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/npmtest"
)

// workstationScript is the agent of TestWorkstation: it reads the
// person's untracked file, runs the module's tests, then pushes against
// each limit (four busy loops for one CPU, memory past its budget, more
// processes than allowed, a write past the disk budget), and edits a file.
const workstationScript = `steps:
  - text: "Reading the notes."
    toolCalls:
      - {name: read_file, args: {path: todo.txt}}
  - text: "Running the tests."
    toolCalls:
      - {name: run_command, args: {command: "go test ./... > /tmp/out; echo \"first go test: $(cat /tmp/out); stored=$(find $GOCACHE -type f | wc -l)\""}}
  - text: "Again, from the build cache cachefs serves."
    toolCalls:
      - {name: run_command, args: {command: "go test ./... && echo cache_mounts=$(grep -c ' - fuse.paddock-cache ' /proc/self/mountinfo) copy=$(awk -v d=$PWD '$5 == d {print $(NF-2)}' /proc/self/mountinfo)"}}
  - text: "The JavaScript side, offline."
    toolCalls:
      - {name: run_command, args: {command: "npm ci --no-audit --no-fund > /tmp/npm.log 2>&1; echo \"npm_exit=$? tiny=$(cat node_modules/tiny/index.js)\"; cat /tmp/npm.log"}}
  - text: "Four busy loops."
    toolCalls:
      - name: run_command
        args:
          command: |
            start=$(date +%s%N)
            for i in 1 2 3 4; do ( end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do :; done ) & done
            wait
            stop=$(date +%s%N)
            times > /tmp/times
            set -- $(tail -n 1 /tmp/times)
            echo "children=$1 $2 wall_ns=$((stop-start))"
  - text: "More memory than allowed."
    toolCalls:
      - {name: run_command, args: {command: "head -c 3G /dev/zero | tail > /dev/null; echo memory_exit=$?"}}
  - text: "More processes than allowed."
    toolCalls:
      - {name: run_command, args: {command: "sh -c 'i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; echo forked every one'; echo procs_exit=$?"}}
  - text: "More disk than allowed."
    toolCalls:
      - {name: run_command, args: {command: "dd if=/dev/zero of=big bs=1M count=300 2>&1 | grep -v records; rm -f big"}}
  - text: "Now the change."
    toolCalls:
      - {name: edit_file, args: {path: calc.go, old: "return a + b", new: "return b + a"}}
  - text: "Done."
`

// TestWorkstation is Paddock on a developer's own machine, as a normal
// user: a session on the repository they are in, with an uncommitted
// change and an untracked file; a command running go test with the
// workstation's toolchain, in a copy made without copying the repository
// (fuse-overlayfs); CPU, memory, processes and disk all enforced
// without root; and an accept onto a checkout the person edited meanwhile
// that names the conflict and leaves their edit intact. .ci/run runs it
// as a user it creates, with the cgroup delegation the README describes.
func TestWorkstation(t *testing.T) {
	// .ci/run sets PADDOCK_TEST_WORKSTATION: there, nothing may skip it.
	skip := t.Skip
	if os.Getenv("PADDOCK_TEST_WORKSTATION") == "1" {
		skip = t.Fatal
	}
	if os.Getuid() == 0 {
		skip("workstation mode is tested as a normal user: .ci/run runs this test as one (README: Workstation mode)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		skip("no Go toolchain on this machine")
	}
	home := t.TempDir()
	data := filepath.Join(home, ".paddock")
	repo := filepath.Join(home, "calc")
	// The module needs one the person has in their own module cache
	// (from a private proxy the sandbox cannot reach): the command builds
	// offline from the cache lent to it.
	goProxy(t, filepath.Join(home, "proxy"))
	files := map[string]string{
		"go.mod":        "module calc\n\ngo 1.22\n\nrequire example.com/greet v1.0.0\n",
		"greet_test.go": "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/greet\"\n)\n\nfunc TestGreet(t *testing.T) {\n\tif greet.Hello() != \"hello\" {\n\t\tt.Fatal(greet.Hello())\n\t}\n}\n",
		"calc.go":       "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
		"calc_test.go":  "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n",
		"package.json":  npmtest.PackageJSON,
		".gitignore":    "node_modules/\n",
	}
	for name, text := range files {
		writeT(t, filepath.Join(repo, name), text)
	}
	git := func(args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=dev", "-c", "user.email=dev@example.com"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	goRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = repo
		cmd.Env = []string{"HOME=" + home, "PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOPROXY=file://" + filepath.Join(home, "proxy"),
			"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
	}
	goRun("mod", "tidy")
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "calc")
	// Work in progress the agent must see.
	writeT(t, filepath.Join(repo, "calc.go"), "package calc\n\n// Add adds two numbers.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n")
	writeT(t, filepath.Join(repo, "todo.txt"), "untracked: make Add commutative-looking\n")
	goRun("test", "./...") // the person's own run, into their own Go build cache
	// The person's own npm install, into their npm cache, from a registry
	// gone by the time the session runs (its package-lock.json untracked).
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("no npm on this machine")
	}
	registry := npmtest.Registry(t)
	install := exec.Command(npm, "install", "--registry", registry.URL, "--no-audit", "--no-fund", "--no-update-notifier")
	install.Dir, install.Env = repo, []string{"HOME=" + home, "PATH=" + filepath.Dir(npm) + ":/usr/bin:/bin"}
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	registry.Close()
	writeT(t, filepath.Join(data, "replay", "ws.yaml"), workstationScript)
	writeT(t, filepath.Join(home, "allow.yaml"), "default: allow\n")

	env := []string{"HOME=" + home, "PATH=" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin", "PADDOCK_DATA_DIR=" + data,
		"PADDOCK_README_CHILD=1", "PADDOCK_LOG_LEVEL=warn",
		"PADDOCK_COMMAND_MAX_CPUS=1", "PADDOCK_COMMAND_MAX_MEMORY_BYTES=1073741824", "PADDOCK_COMMAND_MAX_PROCESSES=64",
		"PADDOCK_SESSION_MAX_DISK_BYTES=268435456"}
	if v := os.Getenv("XDG_RUNTIME_DIR"); v != "" {
		env = append(env, "XDG_RUNTIME_DIR="+v)
	}
	paddock := func(args ...string) (string, int) {
		t.Helper()
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, args...)
		cmd.Env, cmd.Dir = env, repo
		// The person approves whatever the analyzer asks about.
		cmd.Stdin = strings.NewReader(strings.Repeat("y\n", 50))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("paddock %v: %v", args, err)
		}
		return string(out), 0
	}
	t.Cleanup(func() { paddock("server", "stop") })
	// The first command starts the background server every later one uses.
	if out, code := paddock("policy", "apply", "-f", filepath.Join(home, "allow.yaml")); code != 0 || !strings.Contains(out, "started a background paddock server") {
		t.Fatalf("policy apply: %d\n%s", code, out)
	}
	out, code := paddock("run", "--model", "replay/ws.yaml", "work on calc")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	id := regexp.MustCompile(`session ([0-9a-f-]{36}) started`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no session ID in:\n%s", out)
	}
	t.Cleanup(func() { paddock("sessions", "stop", id[1]) }) // its volume goes with it (before the server stops)
	logs, _ := paddock("sessions", "logs", id[1])
	all := out + logs

	for _, want := range []string{
		"make Add commutative-looking",        // the untracked file was in the copy
		"first go test: ok  \tcalc",           // the workstation's toolchain
		"cache_mounts=1",                      // the session's own build cache, which cachefs serves in front of the volume
		"copy=fuse.fuse-overlayfs",            // the copy, an overlay of the shared checkout fuse-overlayfs serves
		"npm_exit=0 tiny=module.exports = 42", // npm installed offline from the person's npm cache, lent
		"memory_exit=137",                     // killed past its memory
		"Cannot fork",                         // refused past its processes
		"No space left on device",             // refused past its disk
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the session's transcript lacks %q:\n%s", want, all)
		}
	}
	// The person's own Go build cache is lent: the session's first go
	// test built only the working copy's package (about 16 files in its
	// cache; about 1,040 when it builds the standard library too).
	if m := regexp.MustCompile(`first go test: ok.*; stored=(\d+)`).FindStringSubmatch(all); m == nil {
		t.Error("no count of the session's own build cache")
	} else if n, _ := strconv.Atoi(m[1]); n > 100 {
		t.Errorf("the session's first go test stored %d files: the person's Go build cache was not lent", n)
	}
	if strings.Contains(all, "│ forked every one") {
		t.Error("200 processes were started under a limit of 64")
	}
	m := regexp.MustCompile(`children=(\d+)m([\d.]+)s (\d+)m([\d.]+)s wall_ns=(\d+)`).FindStringSubmatch(all)
	if m == nil {
		t.Fatalf("no CPU figures in:\n%s", all)
	}
	cpu := minutes(m[1], m[2]) + minutes(m[3], m[4])
	wall, _ := strconv.ParseFloat(m[5], 64)
	if ratio := cpu / (wall / 1e9); ratio > 1.1 {
		t.Errorf("four busy loops used %.2f CPUs under PADDOCK_COMMAND_MAX_CPUS=1", ratio)
	} else {
		t.Logf("four busy loops used %.2f CPUs under PADDOCK_COMMAND_MAX_CPUS=1", ratio)
	}

	// Nothing reached the checkout; the person now edits the line the
	// agent changed: accept names the file and leaves their edit.
	mine := "package calc\n\n// Add adds two numbers.\nfunc Add(a, b int) int {\n\treturn a + b // mine\n}\n"
	if got := readT(t, filepath.Join(repo, "calc.go")); got != "package calc\n\n// Add adds two numbers.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n" {
		t.Fatalf("the checkout changed before accept:\n%s", got)
	}
	writeT(t, filepath.Join(repo, "calc.go"), mine)
	out, code = paddock("sessions", "accept", id[1], "--uncommitted")
	if code == 0 || !strings.Contains(out, "calc.go: you changed the lines the session changes") || !strings.Contains(out, "nothing was applied") {
		t.Fatalf("accept onto a conflicting edit: exit %d\n%s", code, out)
	}
	if got := readT(t, filepath.Join(repo, "calc.go")); got != mine {
		t.Fatalf("the person's edit was overwritten:\n%s", got)
	}
}

// goProxy writes a file-based Go module proxy at dir serving
// example.com/greet v1.0.0.
func goProxy(t *testing.T, dir string) {
	t.Helper()
	v := filepath.Join(dir, "example.com", "greet", "@v")
	writeT(t, filepath.Join(v, "list"), "v1.0.0\n")
	writeT(t, filepath.Join(v, "v1.0.0.info"), `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`)
	writeT(t, filepath.Join(v, "v1.0.0.mod"), "module example.com/greet\n")
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for name, text := range map[string]string{"go.mod": "module example.com/greet\n", "greet.go": "package greet\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n"} {
		w, err := z.Create("example.com/greet@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	writeT(t, filepath.Join(v, "v1.0.0.zip"), buf.String())
}

func minutes(m, s string) float64 {
	mm, _ := strconv.ParseFloat(m, 64)
	ss, _ := strconv.ParseFloat(s, 64)
	return mm*60 + ss
}

func writeT(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readT(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// BenchmarkLocalSessionsList is `paddock sessions ls` as a person types
// it on their machine after the first command: a new process talking to
// the background server over its Unix socket.
func BenchmarkLocalSessionsList(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	_ = os.Chmod(home, 0o711)
	env := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "PADDOCK_DATA_DIR=" + filepath.Join(home, ".paddock"),
		"PADDOCK_README_CHILD=1", "PADDOCK_LOG_LEVEL=warn", "TMPDIR=" + home}
	ls := func(args ...string) {
		cmd := exec.Command(self, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("paddock %v: %v\n%s", args, err, out)
		}
	}
	b.Cleanup(func() { ls("server", "stop") })
	ls("sessions", "ls") // starts the background server
	b.ResetTimer()
	for b.Loop() {
		ls("sessions", "ls")
	}
}

// TestFirstCommandsStartOneServer: two commands at once on a data
// directory nobody holds start one background server between them, both
// succeed, and server stop ends it.
func TestFirstCommandsStartOneServer(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	_ = os.Chmod(home, 0o711)
	env := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "PADDOCK_DATA_DIR=" + filepath.Join(home, ".paddock"),
		"PADDOCK_README_CHILD=1", "PADDOCK_LOG_LEVEL=warn", "TMPDIR=" + home}
	paddock := func(args ...string) (string, error) {
		cmd := exec.Command(self, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = paddock("server", "stop") })
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			out, err := paddock("sessions", "ls")
			if err != nil {
				err = errors.New(err.Error() + ": " + out)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	out, err := paddock("server", "status")
	if err != nil || !strings.Contains(out, "a background paddock server") {
		t.Fatalf("server status: %v\n%s", err, out)
	}
	if out, err = paddock("server", "stop"); err != nil || !strings.Contains(out, "stopped the paddock server") {
		t.Fatalf("server stop: %v\n%s", err, out)
	}
	if out, _ = paddock("server", "status"); !strings.Contains(out, "no paddock server holds") {
		t.Fatalf("after stop: %s", out)
	}
}
