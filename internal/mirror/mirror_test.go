package mirror

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/forge/forgetest"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

func TestMain(m *testing.M) {
	egress.Reexec() // this binary is also the sandbox's egress forwarder
	os.Exit(m.Run())
}

func newCache(t *testing.T) *Cache {
	t.Helper()
	box, err := sandbox.NewBwrap()
	if err == nil {
		err = box.Probe(context.Background())
	}
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(box.Close)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o711))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	// The forwarder is this test binary, where the sandbox user can run it.
	self, err := os.Executable()
	require.NoError(t, err)
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	box.Forwarder = filepath.Join(dir, egress.ForwarderName)
	require.NoError(t, os.WriteFile(box.Forwarder, data, 0o755))
	return &Cache{Dir: filepath.Join(dir, "mirrors"), Box: box, EgressDir: filepath.Join(dir, "egress"), UID: box.UID, TestingAllowLoopback: true, MaxBytes: 1 << 40}
}

// TestResolveAgainstAGitServer: refs of every kind resolve against git's
// own smart-HTTP server behind basic authentication; a second fetch is
// incremental; a wrong credential, an unknown ref and a forge that is down
// are told apart; the credential is nowhere in the mirror.
func TestResolveAgainstAGitServer(t *testing.T) {
	ctx := context.Background()
	const token = "tok-3f9a1c7e5b2d4680"
	srv := forgetest.New(t, "paddock", token)
	bare := srv.Repo(t, "team/app", map[string]string{"README.md": "hello\n"})
	main := strings.TrimSpace(forgetest.Git(t, bare, "rev-parse", "refs/heads/main"))
	forgetest.Git(t, bare, "tag", "v1", main)
	pr := forgetest.Commit(t, bare, "feature", map[string]string{"f.txt": "pull request\n"}, "refs/pull/7/head")

	c := newCache(t)
	conn := forge.Connection{Name: "git", Kind: forge.Gitea, URL: srv.URL, Repositories: []string{"team/*"}}
	_, repo, err := forge.Resolve(srv.URL+"/team/app", []forge.Connection{conn})
	require.NoError(t, err)
	src := Source{Project: "p", Connection: conn, Repository: repo, Credential: []byte(token)}

	for ref, want := range map[string]string{"": main, "main": main, "v1": main, "#7": pr, "pr/7": pr, "feature": pr, main: main} {
		got, _, err := c.Resolve(ctx, src, ref)
		require.NoError(t, err, "ref %q", ref)
		require.Equal(t, want, got, "ref %q", ref)
	}
	dir, err := c.Mirror(ctx, src, "#7", pr)
	require.NoError(t, err)
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotContains(t, string(data), token, "the credential in %s", p)
		return nil
	}))

	_, _, err = c.Resolve(ctx, src, "no-such-branch")
	require.ErrorIs(t, err, ErrUnknownRef)
	_, _, err = c.Resolve(ctx, src, "../../etc")
	require.ErrorContains(t, err, "want a branch")

	wrong := src
	wrong.Credential = []byte("not-the-token")
	_, _, err = c.Resolve(ctx, wrong, "main")
	require.ErrorContains(t, err, "the forge refused the credential")
	require.False(t, errors.Is(err, ErrUnreachable))

	srv.SetDown(true)
	_, _, err = c.Resolve(ctx, src, "main")
	require.ErrorIs(t, err, ErrUnreachable, "a forge answering 503 is down, not refusing")
	srv.SetDown(false)

	// The sandbox's only way out is the forge: a repository elsewhere on
	// the same connection's host is fine, any other host is refused.
	other := src
	other.Repository.URL = "http://127.0.0.2:1/team/app"
	_, _, err = c.Resolve(ctx, other, "main")
	require.Error(t, err)

	// Unused: kept while a live session names it or it was used lately;
	// removed once neither holds. A clone from it counts as a use.
	keepNone := func(string, string, string) bool { return false }
	gone, err := c.Unused(keepNone, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Empty(t, gone, "used a moment ago")
	old := time.Now().Add(-8 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(dir, old, old))
	gone, err = c.Unused(func(p, conn, path string) bool { return p == "p" && conn == "git" && path == "team/app" }, time.Now().Add(-7*24*time.Hour))
	require.NoError(t, err)
	require.Empty(t, gone, "a live session names it")
	_, err = c.Mirror(ctx, src, "#7", pr)
	require.NoError(t, err)
	gone, err = c.Unused(keepNone, time.Now().Add(-7*24*time.Hour))
	require.NoError(t, err)
	require.Empty(t, gone, "cloned from just now")
	require.NoError(t, os.Chtimes(dir, old, old))
	gone, err = c.Unused(keepNone, time.Now().Add(-7*24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []Collected{{Project: "p", Connection: "git", Path: "team/app", Bytes: gone[0].Bytes}}, gone)
	require.Positive(t, gone[0].Bytes)
	require.NoDirExists(t, dir)
	_, _, err = c.Resolve(ctx, src, "main") // fetched again, whole, by the next session
	require.NoError(t, err)
	require.DirExists(t, dir)

	// Collected once its connection is revoked; kept while it lives.
	gone, err = c.Collect(func(project, connection string) bool { return true })
	require.NoError(t, err)
	require.Empty(t, gone)
	gone, err = c.Collect(func(project, connection string) bool { return !(project == "p" && connection == "git") })
	require.NoError(t, err)
	require.Len(t, gone, 1)
	require.Equal(t, "team/app", gone[0].Path)
	require.Positive(t, gone[0].Bytes)
	require.NoDirExists(t, dir)
}

// TestClassify: git's messages told apart by the status the forge
// answered, never by digits of an address.
func TestClassify(t *testing.T) {
	for text, want := range map[string]error{
		"fatal: unable to access 'http://127.0.0.1:40327/a.git/': The requested URL returned error: 503": ErrUnreachable,
		"fatal: unable to access 'http://127.0.0.1:50327/a.git/': The requested URL returned error: 403": ErrRefused,
		"fatal: unable to access 'http://h:4040/a.git/': The requested URL returned error: 401":          ErrRefused,
		"fatal: unable to access 'http://h:5000/a.git/': The requested URL returned error: 404":          ErrRefused,
		"fatal: unable to access 'http://h:4030/a.git/': Failed to connect to h port 4030":               ErrUnreachable,
		"fatal: couldn't find remote ref refs/pull/9/head":                                               ErrUnknownRef,
	} {
		require.ErrorIs(t, classify("fetch", "r", text), want, text)
	}
	require.NotErrorIs(t, classify("fetch", "r", "fatal: 403 bottles of beer at http://h:5403/"), ErrRefused)
}

// TestUnusedWithinMaxBytes: past MaxBytes, the least recently used
// mirrors no live session names go, oldest first, until the rest fit; a
// live session's stays whatever its size, and with MaxBytes 0 only those
// stay.
func TestUnusedWithinMaxBytes(t *testing.T) {
	dir := t.TempDir()
	made := func(path string, bytes int, age time.Duration) string {
		m := filepath.Join(dir, "p", "forge", path+".git")
		require.NoError(t, os.MkdirAll(filepath.Join(m, "objects", "pack"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(m, "objects", "pack", "pack-1.pack"), make([]byte, bytes), 0o600))
		at := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(m, at, at))
		return m
	}
	oldest := made("team/oldest", 400, 3*time.Hour)
	live := made("team/live", 1000, 4*time.Hour)
	middle := made("team/middle", 300, 2*time.Hour)
	newest := made("team/newest", 200, time.Hour)
	keep := func(p, conn, path string) bool { return path == "team/live" }
	week := time.Now().Add(-7 * 24 * time.Hour)

	c := &Cache{Dir: dir, MaxBytes: 1600}
	gone, err := c.Unused(keep, week)
	require.NoError(t, err)
	require.Equal(t, []Collected{{Project: "p", Connection: "forge", Path: "team/oldest", Bytes: 400, Crowded: true}}, gone,
		"1,900 bytes held: the least recently used unkept one goes, and 1,500 fit")
	require.NoDirExists(t, oldest)
	require.DirExists(t, live)

	c.MaxBytes = 1 << 40
	gone, err = c.Unused(keep, week)
	require.NoError(t, err)
	require.Empty(t, gone, "within the bound and used within the week")

	c.MaxBytes = 0
	gone, err = c.Unused(keep, week)
	require.NoError(t, err)
	require.Len(t, gone, 2)
	require.Equal(t, "team/middle", gone[0].Path, "least recently used first")
	require.NoDirExists(t, middle)
	require.NoDirExists(t, newest)
	require.DirExists(t, live, "a live session's mirror stays whatever its size")
}
