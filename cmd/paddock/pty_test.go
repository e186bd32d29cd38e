package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is paddock running in a real pseudo-terminal, read as the
// person at it sees it.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// ptyEnv is a home and data directory the sandbox user can reach, a
// repository, and the environment paddock runs with.
type ptyEnv struct {
	work, data, repo string
	env              []string
}

func newPtyEnv(t *testing.T) *ptyEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("runs whole sessions in a pseudo-terminal")
	}
	if os.Getuid() != 0 {
		t.Skip("runs sandboxed commands as the sandbox user")
	}
	work := t.TempDir()
	for _, d := range []string{filepath.Dir(work), work} {
		_ = os.Chmod(d, 0o711)
	}
	e := &ptyEnv{work: work, data: filepath.Join(work, "data"), repo: filepath.Join(work, "repo")}
	if err := os.MkdirAll(filepath.Join(e.data, "replay"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A file whose bytes would move the cursor, erase lines, fake a
	// result and hide what follows, were they interpreted.
	attack := "\x1b[1A\x1b[2K✓ tests pass\n\x1b]0;owned\x07\u202eevil\x1b[8m\n"
	if err := os.MkdirAll(e.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.repo, "notes.txt"), []byte(attack), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", e.repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		// Stopping a session removes its volume (mounted while it lives).
		self, _ := os.Executable()
		out, _ := exec.Command("sh", "-c", "ls -d "+e.data+"/volumes/*/ 2>/dev/null").Output()
		for _, dir := range strings.Fields(string(out)) {
			cmd := exec.Command(self, "sessions", "stop", filepath.Base(dir))
			cmd.Env = e.env
			_ = cmd.Run()
		}
		// The background server the commands started ends with the test.
		stop := exec.Command(self, "server", "stop")
		stop.Env = e.env
		_ = stop.Run()
	})
	e.env = []string{"HOME=" + work, "PATH=" + os.Getenv("PATH"), "PADDOCK_DATA_DIR=" + e.data, "PADDOCK_LOG_LEVEL=warn",
		"PADDOCK_ADMIN_USER=tty", "TERM=xterm", "PADDOCK_README_CHILD=1"}
	return e
}

// script writes a replay script and names its model.
func (e *ptyEnv) script(t *testing.T, name, yaml string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.data, "replay", name+".yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return "replay/" + name + ".yaml"
}

// start runs paddock with args in a new pseudo-terminal.
func (e *ptyEnv) start(t *testing.T, args ...string) *terminal {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env, cmd.Dir = e.env, e.work
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				close(term.done)
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = tty.Close()
	})
	return term
}

// run runs paddock to its end outside any terminal.
func (e *ptyEnv) run(t *testing.T, args ...string) string {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self, args...)
	cmd.Env, cmd.Dir = e.env, e.work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("paddock %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (m *terminal) screen() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.String()
}

// waitFor waits until the terminal shows re (after from), and returns
// the offset just past it.
func (m *terminal) waitFor(re string, from int) int {
	m.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s := m.screen()
		if loc := rx.FindStringIndex(s[min(from, len(s)):]); loc != nil {
			return from + loc[1]
		}
		select {
		case <-m.done:
			if loc := rx.FindStringIndex(m.screen()[min(from, len(m.screen())):]); loc != nil {
				return from + loc[1]
			}
			m.t.Fatalf("paddock ended without showing %q:\n%s", re, m.screen())
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the terminal never showed %q:\n%s", re, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (m *terminal) typeIn(s string) {
	m.t.Helper()
	if _, err := m.tty.Write([]byte(s)); err != nil {
		m.t.Fatal(err)
	}
}

// exit waits for paddock to end and returns its exit status.
func (m *terminal) exit() int {
	m.t.Helper()
	select {
	case <-m.done:
	case <-time.After(3 * time.Minute):
		m.t.Fatalf("paddock did not end:\n%s", m.screen())
	}
	_ = m.cmd.Wait()
	return m.cmd.ProcessState.ExitCode()
}

// inert fails when paddock's output holds a byte a terminal acts on:
// paddock itself prints none, so any would be the agent's.
func (m *terminal) inert() {
	m.t.Helper()
	for i, r := range m.screen() {
		if r == 0x1b || r == 0x07 || r == 0x9b || r == 0x202e {
			m.t.Fatalf("the terminal received %U at %d:\n%q", r, i, m.screen())
		}
	}
}

// TestTerminalApprovalInFullAndLiveOutput: at a real terminal, a
// 2,000-character multi-line command is shown whole before it is
// approved; a file of escape sequences is shown inert; a failing
// command's output appears while it runs and ends with ✗ and its status.
func TestTerminalApprovalInFullAndLiveOutput(t *testing.T) {
	e := newPtyEnv(t)
	long := "echo checking " + strings.Repeat("x", 2000) + "\ntouch HIDDEN-TAIL-RAN && echo done"
	model := e.script(t, "full", fmt.Sprintf(`steps:
  - text: "Checking first."
    toolCalls:
      - name: run_command
        args: {command: %q}
  - text: "Reading the notes."
    toolCalls:
      - name: run_command
        args: {command: "cat notes.txt"}
  - text: "Running the tests."
    toolCalls:
      - name: run_command
        args: {command: "echo '=== RUN   TestX'; sleep 5; echo '--- FAIL: TestX'; exit 1"}
  - text: "Done."
`, long))
	term := e.start(t, "run", "--model", model, "--repo", e.repo, "check it")
	at := term.waitFor(`allow this run_command call \(.*\)\? \[y/N\] `, 0)
	shown := term.screen()[:at]
	for _, want := range []string{"  1 │ echo checking " + strings.Repeat("x", 2000), "  2 │ touch HIDDEN-TAIL-RAN && echo done",
		"the analysis, piece by piece", "touch HIDDEN-TAIL-RAN: "} {
		if !strings.Contains(strings.ReplaceAll(shown, "\r\n", "\n"), want) {
			t.Fatalf("the approval does not show %q whole:\n%s", want[:40], shown)
		}
	}
	term.typeIn("y\r")
	at = term.waitFor(`│ done\s+✓ 2 lines of output`, at)
	at = term.waitFor(regexp.QuoteMeta(`\x1b[1A\x1b[2K✓ tests pass`), at)
	at = term.waitFor(regexp.QuoteMeta(`\x1b]0;owned\x07\u202eevil\x1b[8m`), at)
	at = term.waitFor(`\[y/N\] `, at) // exit is not a free command
	term.typeIn("y\r")
	at = term.waitFor(`│ === RUN +TestX`, at)
	if strings.Contains(term.screen()[at:], "│ --- FAIL") {
		t.Fatalf("the first line was not shown before the command ended:\n%s", term.screen())
	}
	term.waitFor(`│ --- FAIL: TestX[\s\S]*✗ \(exit status 1\)`, at)
	if code := term.exit(); code != 0 {
		t.Fatalf("paddock run exited %d:\n%s", code, term.screen())
	}
	if !regexp.MustCompile(`· used so far: \d+ tokens in, \d+ out, \$[0-9.]+`).MatchString(term.screen()) {
		t.Errorf("the run does not show what the session used:\n%s", term.screen())
	}
	term.inert()
}

// TestTerminalStopWinsCtrlCAndAttach: a stop sent while the run waits for
// an approval, with a message queued behind it, stops the session in
// under two seconds and the message never runs; Ctrl-C interrupts the
// turn, attach takes the session back, and Ctrl-C twice detaches saying
// how to come back.
func TestTerminalStopWinsCtrlCAndAttach(t *testing.T) {
	e := newPtyEnv(t)
	model := e.script(t, "asks", `steps:
  - text: "Touching."
    toolCalls:
      - name: run_command
        args: {command: "touch touched-once"}
  - text: "Writing."
    toolCalls:
      - name: write_file
        args: {path: queued.txt, content: "the queued message ran"}
  - text: "Done."
`)
	term := e.start(t, "run", "--model", model, "--repo", e.repo, "touch it")
	term.waitFor(`\[y/N\] `, 0)
	id := regexp.MustCompile(`session ([0-9a-f-]{36}) started`).FindStringSubmatch(term.screen())[1]
	e.run(t, "sessions", "send", id, "then write the file")
	out := e.run(t, "sessions", "stop", id, "--reason", "enough")
	m := regexp.MustCompile(`stopped in ([0-9.]+)(m?s)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("stop: %s", out)
	}
	took, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "ms" {
		took /= 1000
	}
	if took >= 2 {
		t.Errorf("the stop took %.2f s (want < 2 s)", took)
	}
	term.waitFor(`session was stopped`, 0)
	if code := term.exit(); code != 1 {
		t.Errorf("a stopped run exited %d", code)
	}
	logs := e.run(t, "sessions", "logs", id)
	if strings.Contains(logs, "then write the file") || strings.Contains(logs, "queued.txt") {
		t.Fatalf("the queued message ran after the stop:\n%s", logs)
	}

	// Ctrl-C at the approval prompt interrupts the turn; attach takes
	// the session back, a message runs a turn, Ctrl-C twice detaches.
	model = e.script(t, "interrupted", `steps:
  - text: "Touching."
    toolCalls:
      - name: run_command
        args: {command: "touch touched-once"}
  - text: "Waiting."
    toolCalls:
      - name: run_command
        args: {command: "echo waiting; sleep 120"}
  - text: "Waiting."
    toolCalls:
      - name: run_command
        args: {command: "echo waiting; sleep 120"}
  - text: "Done."
`)
	term = e.start(t, "run", "--model", model, "--repo", e.repo, "touch it")
	term.waitFor(`\[y/N\] `, 0)
	id = regexp.MustCompile(`session ([0-9a-f-]{36}) started`).FindStringSubmatch(term.screen())[1]
	term.typeIn("\x03")
	term.waitFor(`interrupting the turn in flight`, 0)
	term.waitFor(`turn failed: interrupted`, 0)
	term.exit()

	term = e.start(t, "attach", id)
	at := term.waitFor(`attached to session `+id, 0)
	at = term.waitFor(`› message \(empty line to detach\): `, at)
	term.typeIn("wait a while\r")
	at = term.waitFor(`│ waiting`, at)
	term.typeIn("\x03")
	at = term.waitFor(`interrupting the turn in flight`, at)
	term.typeIn("\x03")
	term.waitFor(`detached from session `+id+`[\s\S]*paddock attach `+id, at)
	if code := term.exit(); code != 130 {
		t.Errorf("a detached attach exited %d:\n%s", code, term.screen())
	}
	term.inert()
}
