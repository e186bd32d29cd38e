package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"golang.org/x/sys/unix"
)

// A working copy is hostile input: the agent controlled every byte of it,
// nested repositories, .gitattributes and symlinks included. This file is
// the only place the host runs git on one (a test fails if another package
// starts git), and it runs git so that nothing in the copy can make it run
// a program, read configuration or leave the copy:
//
//   - no system, global or XDG configuration, and the environment rebuilt
//     (no GIT_* variable from the host reaches git);
//   - the repository named explicitly (GIT_DIR, GIT_WORK_TREE) and its .git
//     required to be a real directory, so a .git file or symlink planted to
//     point elsewhere is refused, and discovery never climbs above the copy;
//   - hooks, fsmonitor, the untracked cache, pagers and editors off; no
//     external diff or textconv; submodules never recursed into (a nested
//     repository is just a directory: its configuration is never read);
//   - no transport: protocol.allow=never (the clone of the user's
//     repository, which is trusted, is the one exception, below).
//
// The repository's own .git/config is Paddock's: the sandbox binds .git
// read-only, so nothing there is the agent's. Filter and diff drivers named
// by an agent-written .gitattributes therefore resolve to nothing: no
// configuration that git reads defines one.

// hardening is passed as -c to every git run on a working copy.
var hardening = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.untrackedCache=false",
	"core.splitIndex=false",
	"core.pager=cat",
	"core.editor=false",
	"core.sshCommand=false",
	"core.askPass=false",
	"core.attributesFile=/dev/null",
	"core.excludesFile=/dev/null",
	"core.symlinks=true",
	"core.protectNTFS=true",
	"core.protectHFS=true",
	"diff.ignoreSubmodules=all",
	"diff.submodule=short",
	"status.submoduleSummary=false",
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"protocol.allow=never",
	"protocol.file.allow=never",
	"gc.auto=0",
	"maintenance.auto=false",
	"safe.directory=*",
	"credential.helper=",
	"gpg.program=false",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"log.showSignature=false",
	"advice.detachedHead=false",
}

// ErrUntrusted says a working copy's layout was changed in a way the host
// refuses to follow (its .git is not a plain directory).
var ErrUntrusted = errors.New("working copy refused")

// gitEnv is the whole environment of git on a working copy.
func gitEnv(dir string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/nonexistent",
		"LANG=C", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_PROTOCOL_FROM_USER=0",
		"XDG_CONFIG_HOME=/nonexistent",
	}
	if dir != "" {
		env = append(env, "GIT_DIR="+filepath.Join(dir, ".git"), "GIT_WORK_TREE="+dir, "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	}
	return env
}

// checkCopy refuses a working copy whose .git is not a real directory, or
// whose repository would borrow objects from elsewhere (alternates).
func checkCopy(dir string) error {
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	if err != nil {
		return fmt.Errorf("%w: %s has no .git directory: %v", ErrUntrusted, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s/.git is a %s, not a directory; the host does not follow it", ErrUntrusted, dir, Kind(fi.Mode()))
	}
	for _, p := range []string{"objects/info/alternates", "objects/info/http-alternates", "commondir"} {
		if _, err := os.Lstat(filepath.Join(dir, ".git", p)); err == nil {
			return fmt.Errorf("%w: %s/.git/%s exists; a working copy never borrows another repository", ErrUntrusted, dir, p)
		}
	}
	return nil
}

// Kind names a file mode for messages.
func Kind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}

// Bounds of one git run on a working copy: its time (unless the caller's
// context is shorter) and the output kept (a diff past it is refused, not
// buffered: a copy could make it as large as its disk budget).
const (
	gitTimeout   = 5 * time.Minute
	maxGitOutput = 64 << 20
)

// ErrTooLarge says git's output on a working copy passed maxGitOutput.
var ErrTooLarge = fmt.Errorf("larger than %d MiB", maxGitOutput>>20)

// gitRun runs hardened git on the working copy dir (or, with dir "", on
// nothing: init and clone name their target in args). extraEnv adds
// variables (a private index).
func gitRun(ctx context.Context, dir string, extraEnv []string, args ...string) (string, error) {
	return gitRunIn(ctx, dir, extraEnv, nil, args...)
}

// gitRunIn is gitRun with stdin.
func gitRunIn(ctx context.Context, dir string, extraEnv []string, stdin []byte, args ...string) (string, error) {
	if dir != "" {
		if err := checkCopy(dir); err != nil {
			return "", err
		}
	}
	full := make([]string, 0, 2*len(hardening)+len(args))
	for _, h := range hardening {
		full = append(full, "-c", h)
	}
	wd := dir
	if wd == "" {
		wd = "/"
	}
	return execGit(ctx, wd, append(gitEnv(dir), extraEnv...), stdin, append(full, args...), args[0])
}

// userGit runs the user's own git in the user's own repository (where an
// accepted diff lands): their configuration and identity apply, as when
// they run git themselves, but no hook runs — the diff may carry hooks
// (a tracked .husky/ or .githooks/ the repository's hooksPath names), and
// accepting must not execute what it delivers.
func userGit(ctx context.Context, repo string, args ...string) (string, error) {
	return execGit(ctx, repo, append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), nil, append([]string{"-c", "core.hooksPath=/dev/null"}, args...), args[0])
}

// ownerGit is userGit run as the owner of repo (fi is its stat), so what
// git writes there belongs to them: a server running as root switches to
// the owner for the run; any other server must be the owner.
func ownerGit(ctx context.Context, repo string, fi os.FileInfo, args ...string) (string, error) {
	// What arrives is the session's (a bundle of its objects): checked as
	// git checks what it fetches; nothing of the repository's
	// configuration that runs a program runs.
	argv := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true"}, args...)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Getuid() {
		return execGit(ctx, repo, append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), nil, argv, args[0])
	}
	if os.Getuid() != 0 {
		return "", fmt.Errorf("the repository %s belongs to user %d and this server runs as user %d: it cannot write there", repo, st.Uid, os.Getuid())
	}
	// Their own configuration, not root's (which they cannot read), and
	// nothing of the server's environment (its keys) in a process of theirs.
	home := "/"
	if u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10)); err == nil {
		home = u.HomeDir
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config", "LANG=C", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0"}
	return runGit(ctx, repo, env, nil, &syscall.Credential{Uid: st.Uid, Gid: st.Gid}, argv, args[0])
}

// execGit runs git as this process's user.
func execGit(ctx context.Context, dir string, env []string, stdin []byte, argv []string, verb string) (string, error) {
	return runGit(ctx, dir, env, stdin, nil, argv, verb)
}

// Bound places a git run in bounds of its own before it starts (the
// sandbox's cgroups, with a command's processor, memory and process
// limits): the host's work on a copy grows with what the session put in
// it, and must not take more of the machine than a command may.
// StartBounded starts cmd within the bounds; release removes them once
// cmd has ended.
type Bound interface {
	StartBounded(cmd *exec.Cmd) (release func(), err error)
}

type boundKey struct{}

// WithBound makes every git run under ctx start within b (nil: none).
func WithBound(ctx context.Context, b Bound) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, boundKey{}, b)
}

// start starts cmd, within the bound ctx carries if any; release is to be
// called once it has ended.
func start(ctx context.Context, cmd *exec.Cmd) (release func(), err error) {
	if b, ok := ctx.Value(boundKey{}).(Bound); ok {
		return b.StartBounded(cmd)
	}
	return func() {}, cmd.Start()
}

// runGit is the one place git is started (as another user when as is
// set): time-bounded (unless the caller's context is shorter), its output
// capped. verb names the run in errors.
func runGit(ctx context.Context, dir string, env []string, stdin []byte, as *syscall.Credential, argv []string, verb string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, gitTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir, cmd.Env = dir, env
	if as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as}
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, errb := &limitedBuffer{max: maxGitOutput}, &limitedBuffer{max: 1 << 20}
	cmd.Stdout, cmd.Stderr = out, errb
	release, err := start(ctx, cmd)
	if err == nil {
		err = cmd.Wait()
		release()
	}
	if out.over {
		return "", fmt.Errorf("git %s: output %w", verb, ErrTooLarge)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (a git run is bounded to %s)", ctx.Err(), gitTimeout)
		}
		return out.buf.String(), &GitError{Verb: verb, Err: err, Stderr: strings.TrimSpace(errb.buf.String())}
	}
	return out.buf.String(), nil
}

// limitedBuffer keeps up to max bytes and notes that more came.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		l.over = true
		return 0, ErrTooLarge // git stops on the broken pipe
	}
	return l.buf.Write(p)
}

// GitError is a failed git run.
type GitError struct {
	Verb   string // the git command: add, diff, …
	Err    error
	Stderr string
}

func (e *GitError) Error() string {
	if e.Full() {
		return fmt.Sprintf("the working copy's disk budget is used up, so git cannot record it (git %s: %s): "+
			"free space in the copy (a command that removes what it does not need) or stop the session", e.Verb, e.Stderr)
	}
	return fmt.Sprintf("git %s: %v: %s", e.Verb, e.Err, e.Stderr)
}

// Full says git failed for want of space: the session's volume is full,
// which the session's own commands caused and can undo (a conflict with
// its budget, not a fault of the server).
func (e *GitError) Full() bool {
	return strings.Contains(e.Stderr, "No space left on device") || strings.Contains(e.Stderr, "Disk quota exceeded")
}

func (e *GitError) Unwrap() []error {
	if e.Full() {
		return []error{e.Err, errdefs.ErrConflict}
	}
	return []error{e.Err}
}

// ExitCode is git's exit status (-1 when it did not exit).
func (e *GitError) ExitCode() int {
	var x *exec.ExitError
	if errors.As(e.Err, &x) {
		return x.ExitCode()
	}
	return -1
}

// Clone makes a working copy at dir from the user's repository src (a
// local path, trusted: it is the user's own). Only this clone may use the
// file transport, and it copies objects (no hardlinks, no alternates).
// The clone's .git/config is Paddock's from then on.
//
// The user's repository may belong to another user than the server's (a
// root server, a user's checkout): git of this age honours safe.directory
// only from a global file, so the clone gets one of its own saying so.
func Clone(ctx context.Context, src, dir string) error {
	err := anyOwner(func(env []string) error {
		_, err := gitRun(ctx, "", env, "-c", "protocol.file.allow=always", "clone", "--quiet", "--no-hardlinks", "--no-local", "--template=", "--", src, dir)
		return err
	})
	if err != nil {
		return err
	}
	return hardenConfig(ctx, dir)
}

// anyOwner runs fn with a global git configuration of its own that lets
// git read a repository whoever owns it (a user's checkout, a mirror the
// sandbox user fetched): git of this age honours safe.directory only from
// a global file, not in the processes it starts (upload-pack).
func anyOwner(fn func(env []string) error) error {
	global, err := os.CreateTemp("", "paddock-gitconfig-")
	if err != nil {
		return err
	}
	defer os.Remove(global.Name())
	_, err = global.WriteString("[safe]\n\tdirectory = *\n")
	if cerr := global.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return fn([]string{"GIT_CONFIG_GLOBAL=" + global.Name()})
}

// CloneAt makes a working copy at dir of commit from mirror, a bare
// mirror of a remote repository (package mirror) that Paddock made: every
// ref of it fetched (a pull request's head is no branch), then commit
// checked out, detached. The copy's .git/config is Paddock's.
func CloneAt(ctx context.Context, mirror, commit, dir string) error {
	if _, err := gitRun(ctx, "", nil, "init", "--quiet", "--template=", "--", dir); err != nil {
		return err
	}
	err := anyOwner(func(env []string) error {
		_, err := gitRun(ctx, dir, env, "-c", "protocol.file.allow=always", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", mirror,
			"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*", "+refs/paddock/*:refs/paddock/*")
		return err
	})
	if err != nil {
		return err
	}
	if _, err := gitRun(ctx, dir, nil, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit, "--"); err != nil {
		return err
	}
	return hardenConfig(ctx, dir)
}

// InitMirror makes the bare repository at dir that mirrors a remote
// repository (package mirror): Paddock's configuration, no hooks, no
// fsmonitor, no automatic gc, no submodules.
func InitMirror(ctx context.Context, dir string) error {
	if _, err := gitRun(ctx, "", nil, "init", "--quiet", "--bare", "--template=", "--", dir); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"core.hooksPath", "/dev/null"}, {"core.fsmonitor", "false"}, {"gc.auto", "0"}, {"fetch.recurseSubmodules", "false"}} {
		if _, err := gitRun(ctx, "", nil, "config", "--file", filepath.Join(dir, "config"), kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// MirrorCommit is the commit rev names in the bare mirror at dir (which
// the sandbox user owns), or an error when it names none.
func MirrorCommit(ctx context.Context, dir, rev string) (string, error) {
	var out string
	err := anyOwner(func(env []string) error {
		var err error
		out, err = gitRun(ctx, "", env, "--git-dir="+dir, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
		return err
	})
	return strings.TrimSpace(out), err
}

// sandboxConfig is what the copy's own .git/config says for the agent's
// git in the sandbox (which reads only that file): no fsmonitor, no hooks,
// and submodules never entered, so that a submodule's .git, which lives
// in the working copy the agent writes, cannot point git at a
// configuration that runs programs (git status would run its fsmonitor).
var sandboxConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"diff.ignoreSubmodules", "all"},
	{"status.submoduleSummary", "false"},
	{"submodule.recurse", "false"},
	{"fetch.recurseSubmodules", "false"},
}

// hardenConfig writes sandboxConfig into the copy's .git/config.
func hardenConfig(ctx context.Context, dir string) error {
	for _, kv := range sandboxConfig {
		if _, err := gitRun(ctx, dir, nil, "config", "--file", filepath.Join(dir, ".git", "config"), kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// Settle makes the index of the copy at dir hold for every later git.
// Git takes a file whose time is in the index's own second as "racily
// clean" and hashes it again at every status, and the sandbox's git
// cannot rewrite the index to stop it: those files' times are set a
// second back and the index refreshed (its owner changed, say).
func Settle(ctx context.Context, dir string) error {
	fi, err := os.Stat(filepath.Join(dir, ".git", "index"))
	if err != nil {
		return nil // no commit, no index
	}
	cut := fi.ModTime().Truncate(time.Second)
	back := unix.NsecToTimespec(cut.Add(-time.Second).UnixNano())
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(dir, ".git") {
			return filepath.SkipDir
		}
		if fi, err := d.Info(); err != nil || fi.ModTime().Before(cut) {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{back, back}, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return err
	}
	_, err = gitRun(ctx, dir, nil, "update-index", "-q", "--refresh")
	return err
}

// Chown gives the working copy at dir to the sandbox user, except
// .git's hooks and config, which stay Paddock's (and are bound read-only
// inside). It walks within (dir, or the part of it that may belong to
// another: an overlay's upper layer) and changes the same paths in dir;
// what the user owns already is left as it is.
func Chown(dir, within string, uid int) error {
	return filepath.WalkDir(within, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(within, p)
		if rel == ".git/hooks" || rel == ".git/config" || strings.HasPrefix(rel, ".git/hooks/") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == uid {
				return nil
			}
		}
		err = os.Lchown(filepath.Join(dir, rel), uid, uid)
		if errors.Is(err, os.ErrNotExist) && within != dir {
			return nil // what the upper layer holds of a removed file
		}
		return err
	})
}

// Init makes an empty working copy at dir with one empty commit.
func Init(ctx context.Context, dir string) error {
	if _, err := gitRun(ctx, "", nil, "init", "--quiet", "--template=", dir); err != nil {
		return err
	}
	if _, err := gitRun(ctx, dir, nil, "-c", "user.name=paddock", "-c", "user.email=paddock@localhost", "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "empty working copy"); err != nil {
		return err
	}
	return hardenConfig(ctx, dir)
}

// Head is the commit the working copy's HEAD names.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := gitRun(ctx, dir, nil, "rev-parse", "--verify", "HEAD^{commit}")
	return strings.TrimSpace(out), err
}

// Grep searches the working copy's tracked and untracked files (not those
// .gitignore excludes) for an extended regular expression under path. It
// returns the matching lines as path:line:text; no match is not an error.
func Grep(ctx context.Context, dir, pattern, path string, ignoreCase bool) ([]string, error) {
	args := []string{"grep", "-n", "-I", "--untracked", "-E", "--no-color", "--no-textconv"}
	if ignoreCase {
		args = append(args, "-i")
	}
	left, err := scan(ctx, dir)
	if err != nil {
		return nil, err
	}
	literal := path
	if path != "." {
		literal = ":(literal)" + path
	}
	args = append(append(args, "-e", pattern, "--", literal), excludes(left)...)
	out, err := gitRun(ctx, dir, nil, args...)
	var ge *GitError
	if errors.As(err, &ge) && ge.ExitCode() == 1 && ge.Stderr == "" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(out, "\n"), "\n"), nil
}

// Seed makes dir a new repository whose first commit holds its files (a
// throwaway repository of the demo's; never a working copy).
func Seed(ctx context.Context, dir, message string) error {
	if _, err := gitRun(ctx, "", nil, "init", "--quiet", "--template=", dir); err != nil {
		return err
	}
	if _, err := gitRun(ctx, dir, nil, "add", "-A"); err != nil {
		return err
	}
	_, err := gitRun(ctx, dir, nil, "-c", "user.name=paddock", "-c", "user.email=paddock@localhost", "commit", "--quiet", "--no-verify", "-m", message)
	return err
}
