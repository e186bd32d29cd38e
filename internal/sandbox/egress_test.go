package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/egress"
)

// names is a resolver for the tests: fixed names, nothing else.
type names map[string][]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// egressBox is a sandbox whose forwarder is this test binary, linked where
// the sandbox user can reach it.
func egressBox(t *testing.T) *Bwrap {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	fwd := filepath.Join(dir, egress.ForwarderName)
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fwd, data, 0o755))
	b := *box
	b.Forwarder = fwd
	return &b
}

// TestEgressOnlyThroughTheProxy: a command allowed one host reaches it
// through the proxy (curl, honouring the proxy variables); every other
// destination — a host not listed, an IP literal, a listed name that
// resolves to loopback — is refused with a message the command prints and
// recorded; and the sandbox still has no interface but lo.
func TestEgressOnlyThroughTheProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from upstream")
	}))
	defer upstream.Close()
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	b := egressBox(t)
	var mu sync.Mutex
	var recs []egress.Record
	sockDir := t.TempDir()
	require.NoError(t, os.Chmod(sockDir, 0o711))
	// "allowed.test" reaches the test server on loopback (the test lets
	// loopback through for that name only by its resolver; a name that
	// resolves to loopback is otherwise refused, below, by a proxy that
	// does not).
	open := func(allowLoopback bool, allow ...string) *egress.Endpoint {
		ep, err := egress.Open(filepath.Join(sockDir, "s"), b.UID, egress.Config{Allow: allow, TestingAllowLoopback: allowLoopback,
			Resolver: names{"allowed.test": {netip.MustParseAddr("127.0.0.1")}, "sneaky.test": {netip.MustParseAddr("127.0.0.1")}},
			Record:   func(r egress.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
		require.NoError(t, err)
		return ep
	}
	dir := workdir(t)
	run := func(ep *egress.Endpoint, script string) (Result, string) {
		var out bytes.Buffer
		res, err := b.Run(context.Background(), Command{Place: Place{Workdir: dir, Egress: ep.Socket}, Script: script, Stdout: &out, Stderr: &out, Timeout: time.Minute})
		require.NoError(t, err)
		require.NoError(t, ep.Close())
		return res, out.String()
	}

	ep := open(true, fmt.Sprintf("allowed.test:%d", port))
	res, out := run(ep, fmt.Sprintf(`curl -sS --max-time 20 http://allowed.test:%d/; echo; curl -sS -v --max-time 20 https://blocked.test/ 2>&1 | grep "^< HTTP"; echo; cat /proc/net/dev | tail -n +3 | cut -d: -f1`, port))
	require.Equal(t, 0, res.ExitCode, out)
	require.Contains(t, out, "hello from upstream")
	require.Contains(t, out, "network to blocked.test is not allowed by this agent's environment")
	var ifaces []string
	for _, l := range strings.Split(strings.TrimSpace(out[strings.LastIndex(out, "\n\n")+1:]), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, " ") {
			ifaces = append(ifaces, l)
		}
	}
	require.Equal(t, []string{"lo"}, ifaces, out)

	// Without loopback allowed: a listed name resolving to loopback, and an
	// IP literal not listed as such, are refused.
	ep = open(false, "sneaky.test:443", "allowed.test:443")
	_, out = run(ep, `curl -sSv --max-time 20 https://sneaky.test/ 2>&1 | grep "^< HTTP"; echo; curl -sSv --max-time 20 https://203.0.113.7/ 2>&1 | grep "^< HTTP"; echo; curl -sS --max-time 5 --noproxy '*' https://203.0.113.7/ >/dev/null 2>&1 || echo DIRECT-FAILED`)
	require.Contains(t, out, "network to sneaky.test is not allowed")
	require.Contains(t, out, "network to 203.0.113.7 is not allowed")
	require.NotContains(t, out, "hello")
	require.Contains(t, out, "DIRECT-FAILED", "without the proxy there is no way out")

	mu.Lock()
	defer mu.Unlock()
	byHost := map[string]egress.Record{}
	for _, r := range recs {
		byHost[r.Host] = r
	}
	require.True(t, byHost["allowed.test"].Allowed)
	require.Positive(t, byHost["allowed.test"].Down)
	for _, h := range []string{"blocked.test", "sneaky.test", "203.0.113.7"} {
		r, ok := byHost[h]
		require.True(t, ok, "%s recorded: %+v", h, recs)
		require.False(t, r.Allowed, h)
		require.NotEmpty(t, r.Reason, h)
	}
	require.Contains(t, byHost["sneaky.test"].Reason, "loopback")
}

// TestNoEgressWithoutProxy: without an egress socket nothing changes — no
// proxy variables, no forwarder.
func TestNoEgressWithoutProxy(t *testing.T) {
	res, out := runIn(t, workdir(t), `env | grep -ci '_proxy='; ls /run/paddock 2>&1`)
	require.Equal(t, 2, res.ExitCode, out)
	require.Contains(t, out, "0\n")
}
