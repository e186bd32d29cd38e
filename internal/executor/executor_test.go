package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/temporalserver"
)

// authority makes a certificate authority and a worker certificate of it.
func authority(t testing.TB) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caPEM, keyPEM, err := temporalserver.NewAuthority()
	require.NoError(t, err)
	pki, err := temporalserver.Issue(caPEM, keyPEM, "127.0.0.1")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	return pool, pki.ClientTLS().Certificates[0]
}

// serve starts an executor on a loopback port; it returns its address.
func serve(t testing.TB, clients *x509.CertPool, dir string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Server{Workdir: filepath.Join(dir, "work"), Deps: filepath.Join(dir, "deps"), State: filepath.Join(dir, "state"), Clients: clients}).Serve(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// pod serves an executor on its own directory, whose path it returns
// with a client of it.
func pod(t testing.TB) (*Client, string) {
	t.Helper()
	pool, cert := authority(t)
	dir := t.TempDir()
	c := Dial(serve(t, pool, dir), cert, "")
	t.Cleanup(c.Close)
	return c, dir
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644))
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRoundTrip(t *testing.T) {
	c, dir := pod(t)
	host := t.TempDir()
	write(t, host, "main.go", "package main\n")
	write(t, host, "gone.txt", "remove me\n")
	write(t, host, ".git/config", "[core]\n")
	write(t, host, ".git/HEAD", "ref: refs/heads/main\n")
	root := openRoot(t, host)
	ctx := context.Background()

	sent, err := c.Push(ctx, Work, root)
	require.NoError(t, err)
	require.Equal(t, 5, sent.Written, "the .git directory and four files")
	require.NotEmpty(t, c.Pin())
	again, err := c.Push(ctx, Work, root)
	require.NoError(t, err)
	require.Zero(t, again.Written, "an unchanged copy sends nothing")

	var out bytes.Buffer
	script := `set -e; cat main.go; echo new > new.txt; rm gone.txt; mkdir -p d && echo x > d/x; ln -s /etc/shadow d/link
echo '[core] fsmonitor = evil' > .git/config; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit; echo 0123 > .git/ORIG_HEAD; echo $HOME`
	res, err := c.Run(ctx, sandbox.Command{ID: "t/1", Script: script, Stdout: &out, Stderr: &out, Timeout: time.Minute}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	require.Equal(t, "package main\n"+sandbox.Home+"\n", out.String())

	got, err := c.Pull(ctx, Work, Into{Root: root, UID: -1, Limit: 1 << 20})
	require.NoError(t, err)
	require.Equal(t, 1, got.Removed)
	b, err := os.ReadFile(filepath.Join(host, "new.txt"))
	require.NoError(t, err)
	require.Equal(t, "new\n", string(b))
	require.NoFileExists(t, filepath.Join(host, "gone.txt"))
	link, err := os.Readlink(filepath.Join(host, "d/link"))
	require.NoError(t, err)
	require.Equal(t, "/etc/shadow", link, "a link comes back as a link")
	b, err = os.ReadFile(filepath.Join(host, ".git/config"))
	require.NoError(t, err)
	require.Equal(t, "[core]\n", string(b), "the host's git configuration stays the host's")
	require.NoDirExists(t, filepath.Join(host, ".git/hooks"))
	require.NoFileExists(t, filepath.Join(host, ".git/ORIG_HEAD"), "nothing of .git comes back")

	// The pod still holds its own configuration; the next push puts the
	// host's back.
	_, err = c.Push(ctx, Work, root)
	require.NoError(t, err)
	b, err = os.ReadFile(filepath.Join(dir, "work/.git/config"))
	require.NoError(t, err)
	require.Equal(t, "[core]\n", string(b))
}

func TestEachRunOnce(t *testing.T) {
	c, dir := pod(t)
	ctx := context.Background()
	_, err := c.Run(ctx, sandbox.Command{ID: "turn/call", Script: "echo run >> ../count"}, nil)
	require.NoError(t, err)
	_, err = c.Run(ctx, sandbox.Command{ID: "turn/call", Script: "echo run >> ../count"}, nil)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 409, se.Code)
	require.Contains(t, se.Message, "not started again")
	b, err := os.ReadFile(filepath.Join(dir, "count"))
	require.NoError(t, err)
	require.Equal(t, "run\n", string(b))
}

func TestLimits(t *testing.T) {
	c, _ := pod(t)
	ctx := context.Background()

	var out bytes.Buffer
	res, err := c.Run(ctx, sandbox.Command{Script: "head -c 300000 /dev/zero | tr '\\0' x", Stdout: &out, MaxOutput: 1000}, nil)
	require.NoError(t, err)
	require.Equal(t, 1000, out.Len())
	require.Equal(t, int64(299000), res.Discarded)

	start := time.Now()
	// A duration of its own: another package's test may sleep 300 s too.
	long := fmt.Sprintf("300.%06d", start.UnixNano()%1e6)
	res, err = c.Run(ctx, sandbox.Command{Script: "(sleep " + long + "; echo late > ../late) & sleep " + long, Timeout: time.Second}, nil)
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, 124, res.ExitCode)
	require.Less(t, time.Since(start), time.Minute)
	// Nothing of the command's group outlives it.
	out.Reset()
	res, err = c.Run(ctx, sandbox.Command{Script: "pgrep -f 'sleep 3[0]0." + long[4:] + "' || echo none", Stdout: &out}, nil)
	require.NoError(t, err)
	require.Equal(t, "none\n", out.String())
}

func TestOnlyTheWorkerAndOnlyThePinnedExecutor(t *testing.T) {
	pool, cert := authority(t)
	_, stranger := authority(t)
	addr := serve(t, pool, t.TempDir())
	ctx := context.Background()

	_, err := Dial(addr, stranger, "").Manifest(ctx, Work)
	require.Error(t, err, "a certificate of another authority is refused")
	_, err = Dial(addr, tls.Certificate{}, "").Manifest(ctx, Work)
	require.Error(t, err, "no certificate is refused")

	first := Dial(addr, cert, "")
	_, err = first.Manifest(ctx, Work)
	require.NoError(t, err)

	other := serve(t, pool, t.TempDir()) // another pod, another key
	_, err = Dial(other, cert, first.Pin()).Manifest(ctx, Work)
	require.ErrorIs(t, err, ErrKeyChanged)
}

// tarOf builds a tar stream of hostile entries.
func tarOf(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range entries {
		body := strings.Repeat("x", int(h.Size))
		require.NoError(t, tw.WriteHeader(&h))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return b.Bytes()
}

func TestUnpackRefusesHostileEntries(t *testing.T) {
	for name, tc := range map[string]struct {
		entries []tar.Header
		want    string
	}{
		"climbing out":           {[]tar.Header{{Name: "../escape", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not a clean relative path"},
		"absolute":               {[]tar.Header{{Name: "/etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not a clean relative path"},
		"unclean":                {[]tar.Header{{Name: "a/../../b", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not a clean relative path"},
		"git configuration":      {[]tar.Header{{Name: ".git/config", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not one the sender may change"},
		"git hook":               {[]tar.Header{{Name: ".git/hooks/pre-commit", Typeflag: tar.TypeReg, Size: 1, Mode: 0o755}}, "not one the sender may change"},
		"nested git config":      {[]tar.Header{{Name: "vendor/x/.git/config", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not one the sender may change"},
		"alternates":             {[]tar.Header{{Name: ".git/objects/info/alternates", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not one the sender may change"},
		"the .git directory":     {[]tar.Header{{Name: ".git", Typeflag: tar.TypeSymlink, Linkname: "/"}}, "not one the sender may change"},
		"git state":              {[]tar.Header{{Name: ".git/objects/ab/cdef", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not one the sender may change"},
		"git index":              {[]tar.Header{{Name: ".git/index", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "not one the sender may change"},
		"through a link to .git": {[]tar.Header{{Name: "a", Typeflag: tar.TypeSymlink, Linkname: ".git"}, {Name: "a/config", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "a is not a directory"},
		"through a link outside": {[]tar.Header{{Name: "b", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}, {Name: "b/planted", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}}, "b is not a directory"},
		"device":                 {[]tar.Header{{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}, "is not a file, directory or link"},
		"hard link":              {[]tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: ".git/config"}}, "is not a file, directory or link"},
		"over the budget":        {[]tar.Header{{Name: "big", Typeflag: tar.TypeReg, Size: 2 << 20, Mode: 0o644}}, "disk budget"},
	} {
		t.Run(name, func(t *testing.T) {
			host := t.TempDir()
			write(t, host, ".git/config", "[core]\n")
			_, err := Unpack(bytes.NewReader(tarOf(t, tc.entries...)), Into{Root: openRoot(t, host), Accept: Returnable, UID: -1, Limit: 1 << 20})
			require.ErrorContains(t, err, tc.want)
			b, err := os.ReadFile(filepath.Join(host, ".git/config"))
			require.NoError(t, err)
			require.Equal(t, "[core]\n", string(b))
			_, err = os.Stat("/tmp/planted")
			require.True(t, errors.Is(err, os.ErrNotExist))
		})
	}
}

func TestReturnable(t *testing.T) {
	for p, want := range map[string]bool{
		"main.go": true, "a/.gitignore": true, ".github/x": true, "x.git": true, ".gitmodules": true, ".git": false, ".git/config": false, ".git/hooks": false,
		".git/index": false, ".git/HEAD": false, ".git/objects/ab/cdef": false, ".git/refs/heads/main": false, "sub/.git/config": false, "sub/.git": false,
	} {
		require.Equal(t, want, Returnable(p), p)
	}
}

// TestScannerSeesEveryChange: a file rewritten with the same size and its
// modification time put back is hashed again (its change time moved).
func TestScannerSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.go", "package a\n")
	root := openRoot(t, dir)
	var s Scanner
	first, err := s.Scan(root)
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, "a.go"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("package b\n"), 0o644))
	require.NoError(t, os.Chtimes(filepath.Join(dir, "a.go"), info.ModTime(), info.ModTime()))
	second, err := s.Scan(root)
	require.NoError(t, err)
	require.NotEqual(t, first["a.go"].Hash, second["a.go"].Hash)
	third, err := s.Scan(root)
	require.NoError(t, err)
	require.Equal(t, second, third)
}
