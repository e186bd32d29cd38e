package shellcheck

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bash reads a command as bash itself does: the parser the sandbox runs.
// Canonical returns bash's own printing of the command (comments dropped,
// line continuations joined, here-document delimiters resolved, $'..'
// and $".." decoded), or an error: ErrBashSyntax when bash cannot parse
// it, another error when bash could not be asked.
type Bash interface {
	Canonical(src string) (string, error)
}

// ErrBashSyntax is bash refusing to parse a command.
var ErrBashSyntax = errors.New("bash cannot parse the command")

// canonFunc is the function bash is asked to define, with the command
// as its body; declare -f prints bash's reading of it.
const canonFunc = "__paddock_canon"

// canonScript defines the function and prints it, running nothing of the
// command: bash is restricted (no output redirection, no command with a
// slash, no exec), may open no file (ulimit -n 3 leaves it only the three
// standard descriptors, so no pipe, process or command substitution, here-
// document or socket can be made), and under extdebug a DEBUG trap that
// fails skips every simple command, [[ ]], (( )), for and case, in
// functions, substitutions and subshells too (set -T), except the two
// commands below. PATH names no directory. What the command may still
// do, should a text close the function early, is compute in a shell that
// exits within a second of CPU time.
const canonScript = `ulimit -n 3
ulimit -t 1
ulimit -v 524288
shopt -s extdebug
set -T
trap '[[ $BASH_COMMAND == "declare -f ` + canonFunc + `" || $BASH_COMMAND == "eval \"\$__paddock_src\"" ]]' DEBUG
eval "$__paddock_src"
declare -f ` + canonFunc

// maxCanonInput bounds a command handed to bash (an environment string
// holds at most 128 KiB on Linux); a longer command is not proven.
const maxCanonInput = 120 << 10

// BashParser asks /bin/bash (or Path) for its reading of commands, one
// fresh, restricted bash per command text, and remembers the answers.
type BashParser struct {
	// Path is bash; empty means "bash" on PATH, then /bin/bash.
	Path string
	// Timeout bounds one answer (default 2s).
	Timeout time.Duration

	mu    sync.Mutex
	order *list.List // of string, most recent first
	cache map[string]*list.Element
	found string // the bash found on PATH, once
}

type canonEntry struct {
	src, out string
	err      error
}

// canonCacheSize is how many command texts a BashParser remembers.
const canonCacheSize = 4096

// SystemBash is the bash of this machine, shared by every analyzer that
// is not given another.
var SystemBash = &BashParser{}

// Canonical returns bash's printing of src as the body of a function.
func (b *BashParser) Canonical(src string) (string, error) {
	b.mu.Lock()
	if b.cache == nil {
		b.cache = map[string]*list.Element{}
		b.order = list.New()
	}
	if e, ok := b.cache[src]; ok {
		b.order.MoveToFront(e)
		ce := e.Value.(*canonEntry)
		b.mu.Unlock()
		return ce.out, ce.err
	}
	b.mu.Unlock()
	out, err := b.run(src)
	if err != nil && !errors.Is(err, ErrBashSyntax) {
		return "", err // a failure to ask is not remembered
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.cache[src]; !ok {
		b.cache[src] = b.order.PushFront(&canonEntry{src, out, err})
		if b.order.Len() > canonCacheSize {
			last := b.order.Back()
			b.order.Remove(last)
			delete(b.cache, last.Value.(*canonEntry).src)
		}
	}
	return out, err
}

func (b *BashParser) path() (string, error) {
	if b.Path != "" {
		return b.Path, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.found != "" {
		return b.found, nil
	}
	if p, err := exec.LookPath("bash"); err == nil {
		b.found = p
		return p, nil
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash", nil
	}
	return "", errors.New("bash is not installed: the command cannot be read as bash reads it")
}

// limitedBuffer keeps at most max bytes and notes any more.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.Len()+len(p) > l.max {
		l.over = true
		p = p[:max(0, l.max-l.Len())]
	}
	l.Buffer.Write(p)
	return len(p), nil
}

func (b *BashParser) run(src string) (string, error) {
	if len(src) > maxCanonInput {
		return "", fmt.Errorf("the command is longer than %d KiB, too long to be read by bash before it runs", maxCanonInput>>10)
	}
	if strings.IndexByte(src, 0) >= 0 {
		return "", errors.New("the command holds a NUL byte")
	}
	path, err := b.path()
	if err != nil {
		return "", err
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--noprofile", "--norc", "-r", "-c", canonScript)
	// The sandbox's bash runs in C.UTF-8, which only $'\u..' and $'\U..'
	// read differently from C; loading it costs a third of bash's start.
	locale := "LC_ALL=C"
	if strings.Contains(src, `\u`) || strings.Contains(src, `\U`) {
		locale = "LC_ALL=C.UTF-8"
	}
	cmd.Env = []string{"__paddock_src=" + canonFunc + "() {\n" + src + "\n}", "PATH=/nonexistent", locale}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd.WaitDelay = time.Second
	stdout := &limitedBuffer{max: 4*len(src) + 64<<10}
	stderr := &limitedBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit) && ctx.Err() == nil:
		return "", fmt.Errorf("bash could not be started to read the command: %w", err)
	case ctx.Err() != nil:
		return "", fmt.Errorf("bash took longer than %s to read the command", timeout)
	case stdout.over:
		return "", errors.New("bash's reading of the command is too long")
	case stdout.Len() == 0:
		msg := strings.TrimSpace(stderr.String())
		msg = strings.TrimPrefix(msg, "bash: ")
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return "", fmt.Errorf("%w: %s", ErrBashSyntax, msg)
	}
	return stdout.String(), nil
}
