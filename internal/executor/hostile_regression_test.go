package executor

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// hostileExecutor is a TLS server speaking the executor's protocol as a
// compromised pod would (the worker pins whatever key it meets first).
func hostileExecutor(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true // as the executor serves
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://")
}

// TestHostileManifestIsBounded (from an attack review): the worker reads
// a pod's manifest within bounds of entries, path length and bytes.
func TestHostileManifestIsBounded(t *testing.T) {
	_, cert := authority(t)
	for name, tc := range map[string]struct {
		body func(w http.ResponseWriter)
		want string
	}{
		"too many entries": {func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"a":{"k":"f"}`)
			for i := range MaxEntries + 1 {
				fmt.Fprintf(w, `,"f%07d":{"k":"f"}`, i)
			}
			fmt.Fprint(w, "}")
		}, "more than 500000 entries"},
		"a path too long": {func(w http.ResponseWriter) { fmt.Fprint(w, `{"`+strings.Repeat("a", MaxPath+1)+`":{"k":"f"}}`) }, "longer than 4096 bytes"},
		"a path too deep": {func(w http.ResponseWriter) { fmt.Fprint(w, `{"`+strings.Repeat("d/", MaxDepth)+`f":{"k":"f"}}`) }, "deeper than 128"},
		"endless": {func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"`)
			chunk := strings.Repeat("a", 1<<20)
			for range (maxManifest >> 20) + 2 {
				fmt.Fprint(w, chunk)
			}
		}, "at most 128 MiB"},
	} {
		t.Run(name, func(t *testing.T) {
			addr := hostileExecutor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.body(w) }))
			c := Dial(addr, cert, "")
			defer c.Close()
			_, err := c.Manifest(context.Background(), Work)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestStalledPullEnds (from an attack review): a pod that starts its
// answer and stalls holds the pull only until its deadline.
func TestStalledPullEnds(t *testing.T) {
	stall := make(chan struct{})
	defer close(stall)
	addr := hostileExecutor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/manifest" {
			fmt.Fprint(w, `{"x":{"k":"f","s":1,"h":"00"}}`)
			return
		}
		tw := tar.NewWriter(w)
		_ = tw.WriteHeader(&tar.Header{Name: "x", Typeflag: tar.TypeReg, Size: 1 << 20, Mode: 0o644})
		w.(http.Flusher).Flush()
		<-stall // drip nothing more
	}))
	_, cert := authority(t)
	c := Dial(addr, cert, "")
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // Sandboxes gives each transfer its own
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Pull(ctx, Work, Into{Root: openRoot(t, t.TempDir()), UID: -1, Limit: 1 << 30})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(2 * time.Minute):
		t.Fatal("the pull outlived its deadline")
	}
}

// TestDeepTrees (from an attack review): a tree within MaxDepth comes
// back; a deeper one is refused by name instead of being walked at a cost
// growing with the cube of its depth.
func TestDeepTrees(t *testing.T) {
	c, _ := pod(t)
	ctx := context.Background()
	host := openRoot(t, t.TempDir())
	res, err := c.Run(ctx, sandbox.Command{Timeout: time.Minute, Script: fmt.Sprintf("for i in $(seq %d); do mkdir a && cd a; done", MaxDepth)}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	got, err := c.Pull(ctx, Work, Into{Root: host, UID: -1, Limit: 1 << 30})
	require.NoError(t, err)
	require.Equal(t, MaxDepth, got.Written)

	res, err = c.Run(ctx, sandbox.Command{Timeout: time.Minute, Script: fmt.Sprintf("cd %s && mkdir a", strings.TrimSuffix(strings.Repeat("a/", MaxDepth), "/"))}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	_, err = c.Pull(ctx, Work, Into{Root: host, UID: -1, Limit: 1 << 30})
	require.ErrorContains(t, err, "deeper than 128 directories")
}

// TestStalledStartEnds (from an attack review): a pod that never answers
// the start of a long-lived process, or starts a refusal and stalls,
// holds the worker only until startWait.
func TestStalledStartEnds(t *testing.T) {
	defer func(d time.Duration) { startWait = d }(startWait)
	startWait = time.Second
	for name, answer := range map[string]func(w http.ResponseWriter){
		"no answer":       func(w http.ResponseWriter) {},
		"refusal stalled": func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError); w.(http.Flusher).Flush() },
	} {
		t.Run(name, func(t *testing.T) {
			stall := make(chan struct{})
			defer close(stall)
			addr := hostileExecutor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				answer(w)
				select {
				case <-stall:
				case <-r.Context().Done():
				}
			}))
			_, cert := authority(t)
			c := Dial(addr, cert, "")
			defer c.Close()
			done := make(chan error, 1)
			go func() {
				_, err := c.Start(context.Background(), StartRequest{Argv: []string{"true"}})
				done <- err
			}()
			select {
			case err := <-done:
				require.ErrorContains(t, err, "did not start the process within 1s")
			case <-time.After(time.Minute):
				t.Fatal("Start still waits for a pod that does not answer")
			}
		})
	}
}
