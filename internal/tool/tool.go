// Package tool holds the built-in tools: each has a name, a JSON schema and
// a description file under descriptions/. Arguments are parsed once,
// complete and strictly; file tools are confined to the working copy.
package tool

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/session"
)

//go:embed descriptions/*.md
var descriptions embed.FS

// Env is what a tool runs against.
type Env struct {
	// Root is the session's working copy; file tools never leave it.
	Root string
	// Shell runs commands in the sandbox; nil means commands cannot run.
	Shell Shell
	// Place is where the session's commands run: Root, the session's
	// caches, its environment's variables and read-only paths, and, for
	// a command allowed the network, its egress proxy.
	Place sandbox.Place
	// Run names the run of a command, the same for every attempt at it
	// (see sandbox.Command.ID).
	Run string
	// DiskBudget is the size of the volume holding Root (0: no volume);
	// a command that fills it is told the budget is exhausted.
	DiskBudget int64
	// Owner, when non-zero, owns what file tools create (the sandbox user,
	// so the agent's commands can go on editing it).
	Owner int
	// MaxDuration and MaxOutput bound each command (zero: the defaults).
	MaxDuration time.Duration
	MaxOutput   int64
	// Live, when set, receives a command's output as it happens (the
	// result still carries all of it); its errors are ignored.
	Live io.Writer
	// Sessions is the project's sessions as the sessions_* tools see
	// them (nil: those tools say they are not available).
	Sessions Sessions
}

// Result is what a tool returns to the model. A question tool returns a
// Question instead: the turn waits for the answer.
type Result struct {
	Output   string
	Question *session.Question
	// Archive asks the engine to archive the session (archive_session).
	Archive *Archive
	// Delegated is the session a delegate call started: the call ends
	// when that session's work comes back.
	Delegated string
}

// Tool is a built-in tool.
type Tool struct {
	Name   string
	Schema json.RawMessage
	run    func(ctx context.Context, env Env, args json.RawMessage) (Result, error)
}

// Spec describes the tool to a model.
func (t Tool) Spec() provider.ToolSpec {
	d, _ := descriptions.ReadFile("descriptions/" + t.Name + ".md")
	return provider.ToolSpec{Name: t.Name, Description: strings.TrimSpace(string(d)), Schema: t.Schema}
}

// Run executes the tool with raw argument JSON.
func (t Tool) Run(ctx context.Context, env Env, args json.RawMessage) (Result, error) {
	return t.run(ctx, env, args)
}

// ErrArgs marks an argument error: the model sent arguments that do not fit
// the tool's schema.
var ErrArgs = errors.New("invalid arguments")

// decode parses args strictly into v: invalid JSON, unknown fields, wrong
// types and trailing data are errors, never guessed around.
func decode(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return fmt.Errorf("%w: empty; want a JSON object", ErrArgs)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrArgs, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrArgs)
	}
	return nil
}

func required(field, value string) error {
	if value == "" {
		return fmt.Errorf("%w: %s is required", ErrArgs, field)
	}
	return nil
}

// Set is a lookup of tools by name.
type Set map[string]Tool

// Builtin returns all built-in tools.
func Builtin() Set {
	s := Set{}
	for _, t := range []Tool{readFile, writeFile, editFile, listDir, search, askUser, archiveSession, runCommand,
		sessionsSummary, sessionsConversation, sessionsSearch, sessionsTools, sessionsTriggers, sessionsBindings, sessionsCommands,
		sessionsSpawn, sessionsSend, delegate} {
		s[t.Name] = t
	}
	return s
}

// Label is a tool's name as operators see it (metric labels, span
// names): a tool of s by its name, "mcp" for any MCP server's tool,
// "other" for a name a model made up (which may carry anything).
func (s Set) Label(name string) string {
	switch _, ok := s[name]; {
	case ok:
		return name
	case strings.HasPrefix(name, MCPPrefix):
		return "mcp"
	}
	return "other"
}

// Idempotent says whether running a built-in tool twice has the effect of
// running it once (reads, a whole-file write, a question keyed by its
// call, a spawn or a message keyed by its call), so a call interrupted by
// a crash may simply run again. Commands, edits and MCP calls are not:
// they run at most once.
func Idempotent(name string) bool {
	switch name {
	case readFile.Name, listDir.Name, search.Name, writeFile.Name, askUser.Name, archiveSession.Name:
		return true
	}
	return Introspects(name) || name == SessionsSpawn || name == SessionsSend || name == Delegate
}

// Introspects says whether a tool only reads the project's sessions.
func Introspects(name string) bool {
	switch name {
	case SessionsSummary, SessionsConversation, SessionsSearch, SessionsTools, SessionsTriggers, SessionsBindings, SessionsCommands:
		return true
	}
	return false
}

// ReadOnly says whether a built-in tool never changes the working copy:
// after any other call (a write, an edit, a command, an MCP call) the
// copy is checkpointed.
func ReadOnly(name string) bool {
	switch name {
	case readFile.Name, listDir.Name, search.Name, askUser.Name, archiveSession.Name, SessionsSpawn, SessionsSend:
		return true
	}
	return Introspects(name)
}

// Names lists the tool names, sorted.
func (s Set) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Only returns the subset named; empty names means all.
func (s Set) Only(names []string) Set {
	if len(names) == 0 {
		return s
	}
	out := Set{}
	for _, n := range names {
		if t, ok := s[n]; ok {
			out[n] = t
		}
	}
	return out
}

// Specs describes the set to a model, sorted by name.
func (s Set) Specs() []provider.ToolSpec {
	var out []provider.ToolSpec
	for _, n := range s.Names() {
		out = append(out, s[n].Spec())
	}
	return out
}

// openRoot opens the working copy as an os.Root: every path is resolved
// inside it, and symlinks pointing out are refused by the kernel-checked walk.
func openRoot(env Env) (*os.Root, error) {
	if env.Root == "" {
		return nil, errors.New("this session has no working copy")
	}
	return os.OpenRoot(env.Root)
}

// inRoot checks a model-given path and opens the working copy it lives in.
func inRoot(env Env, path string) (*os.Root, string, error) {
	p, err := cleanPath(path)
	if err != nil {
		return nil, "", err
	}
	root, err := openRoot(env)
	return root, p, err
}

// cleanPath checks a model-given path: relative, inside the working copy.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: path is required", ErrArgs)
	}
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is absolute; give a path relative to the working copy", p)
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q leaves the working copy", p)
	}
	for _, part := range strings.Split(c, "/") {
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("path %q is inside a .git directory, which file tools never touch (its configuration and hooks would run on the host)", p)
		}
	}
	return c, nil
}

// openRegular opens a regular file of the working copy, never blocking: a
// named pipe, device or socket the agent planted is refused (opening one
// would hang or reach outside), checked on the opened file so it cannot be
// swapped in between. For writing, the file is created if missing and
// truncated only once it is known to be regular.
func openRegular(root *os.Root, p string, write bool) (*os.File, error) {
	if write {
		if err := realPath(root, p); err != nil {
			return nil, err
		}
	}
	if fi, err := root.Lstat(p); err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket|os.ModeDevice|os.ModeCharDevice) != 0 {
		return nil, fmt.Errorf("%s is not a regular file (%s); file tools only read and write regular files", p, fi.Mode().Type())
	}
	flag := os.O_RDONLY | syscall.O_NONBLOCK
	if write {
		flag = os.O_RDWR | os.O_CREATE | syscall.O_NONBLOCK
	}
	f, err := root.OpenFile(p, flag, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s); file tools only read and write regular files", p, fi.Mode().Type())
	}
	if err == nil && write {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// realPath refuses a path that goes through a symbolic link: the host
// writes only where the path itself says, never where a link the agent
// made points (a link to .git would let a write land in its
// configuration, which host git reads). No sandboxed process runs while a
// file tool does, so the check holds for the write that follows.
func realPath(root *os.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(prefix)
		if err != nil {
			return nil // the rest does not exist yet: created as real directories
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("path %q goes through the symbolic link %q; file tools write only to real paths (run_command can follow links inside the sandbox)", p, prefix)
		}
	}
	return nil
}

// readRegular reads at most limit+1 bytes of a regular file.
func readRegular(root *os.Root, p string, limit int64) ([]byte, error) {
	f, err := openRegular(root, p, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// writeRegular replaces a regular file's content, creating it if missing
// (owned by owner when non-zero).
func writeRegular(root *os.Root, p string, data []byte, owner int) error {
	f, err := openRegular(root, p, true)
	if err != nil {
		return err
	}
	if owner != 0 {
		if err := f.Chown(owner, owner); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
