// Package mirror keeps the remote repositories a project's sessions work
// on: one bare mirror per repository, shared by the project's sessions,
// fetched incrementally. Paddock fetches, never the agent, and not on the
// host's network either: git runs in a sandbox whose only way out is the
// forge (an egress proxy allowing its HOST:PORT alone), and the
// connection's credential reaches that git on its standard input, never
// on a command line, in a file or in the environment of anything else.
package mirror

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Cache is a node's mirrors, under Dir/PROJECT/CONNECTION/PATH.git.
type Cache struct {
	Dir string
	// Box runs git; EgressDir holds the proxies' sockets; UID is the
	// sandbox user's (the mirrors are its).
	Box       *sandbox.Bwrap
	EgressDir string
	UID       int
	// Permit: see egress.Config.Permit.
	Permit []netip.Prefix
	// TestingAllowLoopback lets tests fetch from a forge on loopback.
	TestingAllowLoopback bool
	// Timeout bounds one fetch (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxBytes bounds the mirrors Unused leaves (0: only those kept).
	MaxBytes int64

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// DefaultTimeout bounds one fetch.
const DefaultTimeout = 10 * time.Minute

// Source is a repository to fetch and what to fetch it with.
type Source struct {
	Project    string
	Connection forge.Connection
	Repository forge.Repository
	// Credential is the connection's token or password, in clear: it goes
	// to the sandboxed git's standard input only.
	Credential []byte
}

// ErrUnreachable says the forge did not answer (down, or unreachable):
// worth trying again later, unlike a refusal.
var ErrUnreachable = errors.New("the forge did not answer")

// ErrRefused says the forge refused the credential (or
// hides the repository from it).
var ErrRefused = errors.New("the forge refused the credential")

// ErrUnknownRef says the ref names nothing in the repository.
var ErrUnknownRef = errors.New("no such ref")

var (
	refText = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/+-]{0,199}$`)
	hexID   = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	prRef   = regexp.MustCompile(`^(?:#|pr/|pull/|!)?([0-9]{1,9})$`)
)

// CheckRef checks a ref as a person or a trigger gives it: a branch, a
// tag, a full commit ID, or a pull request (#N, pr/N, !N or N).
func CheckRef(ref string) error {
	if ref == "" {
		return nil
	}
	if !refText.MatchString(strings.TrimPrefix(ref, "#")) || strings.Contains(ref, "..") || strings.Contains(ref, "//") ||
		strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".lock") || strings.HasSuffix(ref, ".") {
		return fmt.Errorf("ref %q: want a branch, a tag, a full commit ID or a pull request number (#N)", ref)
	}
	return nil
}

// PullNumber is the pull request ref names (#N, pr/N, !N or N), or 0.
func PullNumber(ref string) int64 {
	m := prRef.FindStringSubmatch(ref)
	if m == nil || hexID.MatchString(ref) {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// Resolve fetches src (incrementally) and says what commit ref names in
// it: the default branch's head for "", a branch, a tag, a full commit
// ID, or a pull request's head. Fetched, the commit stays in the mirror
// for Clone.
func (c *Cache) Resolve(ctx context.Context, src Source, ref string) (commit string, took time.Duration, err error) {
	if err := CheckRef(ref); err != nil {
		return "", 0, err
	}
	dir, err := c.path(src)
	if err != nil {
		return "", 0, err
	}
	unlock := c.lock(dir)
	defer unlock()
	if err := c.ensure(ctx, dir); err != nil {
		return "", 0, err
	}
	refspecs := []string{"+HEAD:refs/paddock/head", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}
	pr := ""
	if m := prRef.FindStringSubmatch(ref); m != nil && !hexID.MatchString(ref) {
		pr = m[1]
		remote := "refs/pull/" + pr + "/head"
		if src.Connection.Kind == forge.GitLab {
			remote = "refs/merge-requests/" + pr + "/head"
		}
		refspecs = append(refspecs, "+"+remote+":refs/paddock/pull/"+pr)
	}
	start := time.Now()
	if err := c.fetch(ctx, dir, src, refspecs); err != nil {
		return "", time.Since(start), err
	}
	took = time.Since(start)
	used(dir)
	var candidates []string
	switch {
	case ref == "":
		candidates = []string{"refs/paddock/head"}
	case pr != "":
		candidates = []string{"refs/paddock/pull/" + pr}
	case hexID.MatchString(ref):
		candidates = []string{ref}
	default:
		candidates = []string{"refs/heads/" + ref, "refs/tags/" + ref}
	}
	for _, cand := range candidates {
		if commit, err := workspace.MirrorCommit(ctx, dir, cand); err == nil {
			return commit, took, nil
		}
	}
	what := "ref " + ref
	if ref == "" {
		what = "a default branch"
	}
	return "", took, fmt.Errorf("repository %s has no %s: %w", src.Repository.URL, what, ErrUnknownRef)
}

// Mirror is the directory of src's mirror, holding every commit Resolve
// named in it (a session's copy is cloned from it), fetched again when it
// lacks commit (a node that did not resolve it, a mirror collected):
// commit is what ref resolved to.
func (c *Cache) Mirror(ctx context.Context, src Source, ref, commit string) (string, error) {
	dir, err := c.path(src)
	if err != nil {
		return "", err
	}
	if !hexID.MatchString(commit) {
		return "", fmt.Errorf("mirror: commit %q: want a full commit ID", commit)
	}
	unlock := c.lock(dir)
	has := func() bool {
		_, err := workspace.MirrorCommit(ctx, dir, commit)
		return err == nil
	}
	ok := has()
	if ok {
		used(dir) // cloned from now: not collected as unused
	}
	unlock()
	if ok {
		return dir, nil
	}
	if _, _, err := c.Resolve(ctx, src, ref); err != nil {
		return "", err
	}
	unlock = c.lock(dir)
	defer unlock()
	if !has() {
		return "", fmt.Errorf("repository %s no longer holds commit %s (ref %q moved and the commit was dropped): %w", src.Repository.URL, commit, ref, ErrUnknownRef)
	}
	return dir, nil
}

// path is src's mirror directory.
func (c *Cache) path(src Source) (string, error) {
	if src.Project == "" || src.Connection.Name == "" || src.Repository.Path == "" {
		return "", fmt.Errorf("mirror: incomplete source")
	}
	return filepath.Join(c.Dir, src.Project, src.Connection.Name, filepath.FromSlash(src.Repository.Path)+".git"), nil
}

func (c *Cache) lock(dir string) func() {
	c.mu.Lock()
	if c.locks == nil {
		c.locks = map[string]*sync.Mutex{}
	}
	l := c.locks[dir]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[dir] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ensure makes the bare mirror at dir, once: Paddock's own config (no
// hooks), the sandbox user's to write.
func (c *Cache) ensure(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if err := os.MkdirAll(p, 0o711); err != nil {
			return err
		}
		_ = os.Chmod(p, 0o711)
		if p == c.Dir || p == filepath.Dir(p) {
			break
		}
	}
	tmp := dir + ".new"
	_ = os.RemoveAll(tmp)
	if err := workspace.InitMirror(ctx, tmp); err != nil {
		return err
	}
	if os.Getuid() == 0 {
		if err := filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
			if err != nil || p == filepath.Join(tmp, "config") {
				return err
			}
			return os.Lchown(p, c.UID, c.UID)
		}); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dir)
}

// fetch runs git fetch of refspecs from src into the mirror at dir, in
// the sandbox.
func (c *Cache) fetch(ctx context.Context, dir string, src Source, refspecs []string) error {
	return c.remote(ctx, dir, src, append([]string{"fetch", "--quiet", "--no-tags", "--prune", "--no-write-fetch-head", "--", src.Repository.CloneURL()}, refspecs...))
}

// Deliver pushes commit to the forge as branch (never forced: a branch
// that exists there moves only forward). write puts commit into the
// mirror at dir first (a bundle of the accepted snapshot); both run under
// the mirror's lock, so no fetch comes between, and the commit pushed is
// the one named, whatever the mirror's refs say.
func (c *Cache) Deliver(ctx context.Context, src Source, commit, branch string, write func(dir string) error) error {
	if err := CheckRef(branch); err != nil || prRef.MatchString(branch) || hexID.MatchString(branch) {
		return fmt.Errorf("mirror: branch %q: not a branch name", branch)
	}
	if !hexID.MatchString(commit) {
		return fmt.Errorf("mirror: commit %q: want a full commit ID", commit)
	}
	dir, err := c.path(src)
	if err != nil {
		return err
	}
	unlock := c.lock(dir)
	defer unlock()
	if err := write(dir); err != nil {
		return err
	}
	used(dir)
	return c.remote(ctx, dir, src, []string{"push", "--quiet", "--no-verify", "--", src.Repository.CloneURL(), commit + ":refs/heads/" + branch})
}

// IsBranch says the mirror of src holds branch name (as last fetched).
func (c *Cache) IsBranch(ctx context.Context, src Source, name string) bool {
	dir, err := c.path(src)
	if err != nil || CheckRef(name) != nil {
		return false
	}
	_, err = workspace.MirrorCommit(ctx, dir, "refs/heads/"+name)
	return err == nil
}

// Collected is a mirror Collect or Unused removed; Crowded says Unused
// removed it to bring the mirrors within MaxBytes (not for its age).
type Collected struct {
	Project, Connection, Path string
	Bytes                     int64
	Crowded                   bool
}

// Collect removes the mirrors whose connection keep refuses (revoked, or
// gone): nothing may fetch into them again, and what they hold is the
// forge's. Mirrors of live connections stay, shared by the sessions.
func (c *Cache) Collect(keep func(project, connection string) bool) ([]Collected, error) {
	var out []Collected
	projects, err := os.ReadDir(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		conns, err := os.ReadDir(filepath.Join(c.Dir, p.Name()))
		if err != nil || !p.IsDir() {
			continue
		}
		for _, cn := range conns {
			if !cn.IsDir() || keep(p.Name(), cn.Name()) {
				continue
			}
			root := filepath.Join(c.Dir, p.Name(), cn.Name())
			// Each mirror removed under its own lock, as a fetch into it
			// holds it: one under way finishes first.
			err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() || !strings.HasSuffix(path, ".git") {
					return nil
				}
				rel, _ := filepath.Rel(root, path)
				unlock := c.lock(path)
				defer unlock()
				m := Collected{Project: p.Name(), Connection: cn.Name(), Path: strings.TrimSuffix(filepath.ToSlash(rel), ".git"), Bytes: size(path)}
				if err := os.RemoveAll(path); err != nil {
					return err
				}
				out = append(out, m)
				return filepath.SkipDir
			})
			if err == nil {
				unlock := c.lock(root)
				err = os.RemoveAll(root)
				unlock()
			}
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// used marks the mirror at dir used now (its directory's time): Unused
// spares a mirror used lately.
func used(dir string) {
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
}

// Unused removes the mirrors keep does not name (PROJECT, CONNECTION,
// PATH) that were last used (fetched, cloned from, pushed through) before
// before; then, while the mirrors hold more than MaxBytes, the least
// recently used of the others that keep does not name (those it names,
// a live session's, stay whatever their size). A mirror in use now is
// waited for under its lock, and then it was used now: it stays.
func (c *Cache) Unused(keep func(project, connection, path string) bool, before time.Time) ([]Collected, error) {
	type mirror struct {
		dir  string
		m    Collected
		at   time.Time
		kept bool
	}
	var all []mirror
	var total int64
	err := filepath.WalkDir(c.Dir, func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !strings.HasSuffix(dir, ".git") {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(c.Dir, dir)
		parts := strings.SplitN(filepath.ToSlash(rel), "/", 3)
		if err != nil || len(parts) < 3 {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return filepath.SkipDir
		}
		x := mirror{dir: dir, m: Collected{Project: parts[0], Connection: parts[1], Path: strings.TrimSuffix(parts[2], ".git"), Bytes: size(dir)}, at: fi.ModTime()}
		x.kept = keep(x.m.Project, x.m.Connection, x.m.Path)
		total += x.m.Bytes
		all = append(all, x)
		return filepath.SkipDir
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b mirror) int { return a.at.Compare(b.at) })
	var out []Collected
	for _, x := range all {
		old := x.at.Before(before)
		if x.kept || (!old && total <= c.MaxBytes) {
			continue
		}
		unlock := c.lock(x.dir)
		if fi, err := os.Stat(x.dir); err != nil || fi.ModTime().After(x.at) {
			unlock()
			continue
		}
		err := os.RemoveAll(x.dir)
		unlock()
		if err != nil {
			return out, err
		}
		x.m.Crowded = !old
		total -= x.m.Bytes
		out = append(out, x.m)
	}
	return out, nil
}

// size is the bytes of the files under dir.
func size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// remote runs git (args after its options) on the mirror at dir against
// src's forge, in the sandbox.
func (c *Cache) remote(ctx context.Context, dir string, src Source, gitArgs []string) error {
	u, err := url.Parse(src.Repository.CloneURL())
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	ep, err := egress.Open(c.EgressDir, c.UID, egress.Config{Allow: []string{host + ":" + port}, Permit: c.Permit, TestingAllowLoopback: c.TestingAllowLoopback})
	if err != nil {
		return fmt.Errorf("egress proxy for the fetch: %w", err)
	}
	defer ep.Close()
	args := append([]string{"git", "-c", "credential.helper=", "-c", "core.askPass=", "-c", "protocol.allow=never", "-c", "protocol.https.allow=always",
		"-c", "protocol.http.allow=always", "-c", "http.followRedirects=false"}, gitArgs...)
	// The header is read from standard input into git's own environment:
	// it is on no command line, in no file, in no other process.
	script := `IFS= read -r h || exit 97; export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader GIT_CONFIG_VALUE_0="$h"; unset h; ` +
		`unset NO_PROXY no_proxy; export GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false; exec ` + sandbox.Quote(args)
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(src.Connection.User()+":"+string(src.Credential)))
	var out bytes.Buffer
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	res, err := c.Box.Run(ctx, sandbox.Command{
		Place:  sandbox.Place{Session: "mirror", Workdir: dir, Egress: ep.Socket},
		Script: script, Timeout: timeout, MaxOutput: 64 << 10,
		Stdin: strings.NewReader(header + "\n"), Stdout: &out, Stderr: &out,
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", gitArgs[0], src.Repository.URL, err)
	}
	if res.ExitCode == 0 {
		return nil
	}
	text := out.String()
	for _, secret := range []string{string(src.Credential), base64.StdEncoding.EncodeToString([]byte(src.Connection.User() + ":" + string(src.Credential))), url.QueryEscape(string(src.Credential))} {
		if secret != "" {
			text = strings.ReplaceAll(text, secret, "[credential]")
		}
	}
	text = strings.TrimSpace(text)
	if res.TimedOut {
		return fmt.Errorf("%s %s: no answer within %s: %w", gitArgs[0], src.Repository.URL, timeout, ErrUnreachable)
	}
	return classify(gitArgs[0], src.Repository.URL, text)
}

// classify says what a failed fetch's output means.
func classify(verb, repo, text string) error {
	low := strings.ToLower(text)
	status := ""
	if m := httpStatus.FindStringSubmatch(low); m != nil {
		status = m[1] // what the forge (or the proxy) answered; not a port in an address
	}
	switch {
	case status == "401" || status == "403" || strings.Contains(low, "authentication failed") || strings.Contains(low, "could not read username"):
		return fmt.Errorf("%s %s: the forge refused the credential (revoked, or without access to this repository): %s: %w", verb, repo, lastLine(text), ErrRefused)
	case status == "404" || strings.Contains(low, "does not appear to be a git repository") || strings.Contains(low, "repository not found"):
		return fmt.Errorf("%s %s: the forge has no such repository (or hides it from this credential): %s: %w", verb, repo, lastLine(text), ErrRefused)
	case strings.Contains(low, "couldn't find remote ref"):
		return fmt.Errorf("%s %s: %s: %w", verb, repo, lastLine(text), ErrUnknownRef)
	case strings.HasPrefix(status, "5") || strings.Contains(low, "could not resolve") || strings.Contains(low, "failed to connect") ||
		strings.Contains(low, "connection refused") || strings.Contains(low, "timed out") || strings.Contains(low, "empty reply") || strings.Contains(low, "recv failure"):
		return fmt.Errorf("%s %s: %s: %w", verb, repo, lastLine(text), ErrUnreachable)
	}
	return fmt.Errorf("%s %s: %s", verb, repo, lastLine(text))
}

// httpStatus finds the HTTP status in curl's message as git prints it.
var httpStatus = regexp.MustCompile(`returned error: ([0-9]{3})`)

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		return "git failed without a word"
	}
	return s
}
