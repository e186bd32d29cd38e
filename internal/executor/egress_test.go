package executor

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/temporalserver"
)

// names resolves from a table.
type names map[string]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// A command given a route reaches the network only through its run's
// proxy, by the gateway: what the allowlist names answers, anything else
// is refused by the proxy, and every connection is recorded. A command
// given none has no proxy at all.
func TestCommandReachesItsProxyThroughTheGateway(t *testing.T) {
	pool, cert := authority(t)
	c := Dial(serve(t, pool, t.TempDir()), cert, "")
	t.Cleanup(c.Close)
	ctx := context.Background()

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from upstream") }))
	t.Cleanup(up.Close)
	port := up.Listener.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	var recs []egress.Record
	ep, err := egress.Open(t.TempDir(), 0, egress.Config{
		Allow: []string{fmt.Sprintf("allowed.test:%d", port)}, TestingAllowLoopback: true,
		Resolver: names{"allowed.test": netip.MustParseAddr("127.0.0.1"), "other.test": netip.MustParseAddr("127.0.0.1")},
		Record:   func(r egress.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
	})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gw := &egress.Gateway{Addr: ln.Addr().String(), Name: temporalserver.ServerName, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}
	gctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- gw.Serve(gctx, ln) }()
	t.Cleanup(func() { stop(); <-done })
	route, end := gw.Open(ep.Socket)

	var out strings.Builder
	script := fmt.Sprintf("curl -sS --max-time 20 http://allowed.test:%d/; echo; curl -sS --max-time 20 http://other.test:%d/; echo; echo \"proxy=$HTTPS_PROXY\"", port, port)
	res, err := c.Run(ctx, sandbox.Command{ID: "net/1", Script: script, Stdout: &out, Stderr: &out, Timeout: time.Minute}, &route)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, out.String())
	require.Contains(t, out.String(), "hello from upstream")
	require.Contains(t, out.String(), "network to other.test is not allowed by this agent's environment")
	require.Regexp(t, `proxy=http://127\.0\.0\.1:\d+\n`, out.String(), "the proxy is the executor's forwarder on the pod's loopback, never the gateway")
	end()
	require.NoError(t, ep.Close())
	mu.Lock()
	require.Len(t, recs, 2)
	require.True(t, recs[0].Allowed && recs[0].Host == "allowed.test" && recs[0].Status == 200, "%+v", recs[0])
	require.False(t, recs[1].Allowed, "%+v", recs[1])
	mu.Unlock()

	out.Reset()
	_, err = c.Run(ctx, sandbox.Command{ID: "net/2", Script: "env | grep -i _proxy= || echo no proxy", Stdout: &out, Timeout: time.Minute}, nil)
	require.NoError(t, err)
	require.Equal(t, "no proxy\n", out.String())
}
