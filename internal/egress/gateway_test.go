package egress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// authority is a test CA and a gateway certificate it issued for name.
func authority(t testing.TB, name string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test authority"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// gateway serves a Gateway on 127.0.0.1 until the test ends.
func gateway(t testing.TB) (*Gateway, *x509.CertPool) {
	t.Helper()
	pool, cert := authority(t, "paddock-egress")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Addr: ln.Addr().String(), Name: "paddock-egress", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	return g, pool
}

// forwardTo serves a forwarder on 127.0.0.1 dialing with dial, as the
// executor does in a pod, until the test ends.
func forwardTo(t testing.TB, dial func(context.Context) (net.Conn, error)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, ln, dial) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// A pod's forwarder reaches its run's proxy through the gateway: the
// allowlist is the run's, a refusal is the proxy's own answer, and once
// the run ends its token opens nothing.
func TestGatewayRoutesARunToItsProxy(t *testing.T) {
	e := newEcho(t)
	up := fmt.Sprintf("allowed.test:%d", e.port())
	h := start(t, Config{Allow: []string{up}, TestingAllowLoopback: true,
		Resolver: newResolver(map[string][]string{"allowed.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}})})
	g, pool := gateway(t)
	route, end := g.Open(h.sock)
	if route.Addr != g.Addr || route.Name != "paddock-egress" || len(route.Token) != tokenLen {
		t.Fatalf("route %+v", route)
	}
	h.fwd = forwardTo(t, Dialer(route, pool))

	c, br, resp, err := h.connect(up)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", up, resp, err)
	}
	io.WriteString(c, "through the gateway")
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(br)
	c.Close()
	if string(got) != "through the gateway" {
		t.Fatalf("echoed %q", got)
	}
	_, _, resp, err = h.connect(fmt.Sprintf("other.test:%d", e.port()))
	if err != nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, "not allowed") {
		t.Fatalf("CONNECT other.test: %v %v; want the proxy's 403", resp, err)
	}

	end()
	if _, _, resp, err := h.connect(up); err == nil {
		t.Fatalf("CONNECT after the run ended: %v; want the connection closed", resp.Status)
	}
	if n := e.accepted.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections, want 1", n)
	}
}

// Connections that do not carry a live run's token, or that do not trust
// the gateway's authority, reach nothing.
func TestGatewayRefusesStrangers(t *testing.T) {
	h := start(t, Config{Allow: []string{"allowed.test:443"}})
	g, pool := gateway(t)
	route, _ := g.Open(h.sock)

	dial := func(token string) error {
		c, err := tls.Dial("tcp", g.Addr, &tls.Config{RootCAs: pool, ServerName: "paddock-egress"})
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(15 * time.Second))
		fmt.Fprintf(c, "%s\nCONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n", token)
		_ = c.CloseWrite()
		// Closed, or reset for the bytes it left unread: either way
		// unanswered.
		if b, _ := io.ReadAll(c); len(b) > 0 {
			return fmt.Errorf("answered %q", b)
		}
		return nil
	}
	for name, token := range map[string]string{
		"another token":  strings.Repeat("0", tokenLen),
		"a short token":  route.Token[:10],
		"a longer token": route.Token + "00",
		"no token":       "",
	} {
		if err := dial(token); err != nil {
			t.Errorf("%s: %v; want the connection closed unanswered", name, err)
		}
	}

	other, _ := authority(t, "paddock-egress")
	if _, err := Dialer(route, other)(context.Background()); err == nil {
		t.Error("a gateway of another authority was trusted")
	}
	wrongName := route
	wrongName.Name = "elsewhere"
	if _, err := Dialer(wrongName, pool)(context.Background()); err == nil {
		t.Error("a gateway certificate for another name was trusted")
	}
	// A TCP connection that never speaks is dropped at the handshake's
	// deadline; the gateway still serves others meanwhile.
	idle, err := net.Dial("tcp", g.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	c, err := Dialer(route, pool)(context.Background())
	if err != nil {
		t.Fatalf("a run's connection while another idles: %v", err)
	}
	c.Close()
}

// Pods that open connections and never speak hold at most their share
// of the gateway's pending slots, and when they hold them all, the one
// holding the most gives way: another pod's run still connects.
func TestGatewayStarvesNoOtherPod(t *testing.T) {
	h := start(t, Config{Allow: []string{"allowed.test:443"}})
	g, pool := gateway(t)
	route, end := g.Open(h.sock)
	defer end()
	held := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.held
	}
	idle := func(ip string, n int) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		for range n {
			c, err := d.Dial("tcp", g.Addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
	}
	tunnel := func(why string) {
		t.Helper()
		c, err := Dialer(route, pool)(context.Background())
		if err != nil {
			t.Fatalf("a run's connection while %s: %v", why, err)
		}
		_ = c.SetDeadline(time.Now().Add(15 * time.Second))
		fmt.Fprintf(c, "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
		b, _ := io.ReadAll(io.LimitReader(c, 12))
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1") {
			t.Fatalf("while %s, the run's tunnel answered %q; want the proxy's answer", why, b)
		}
	}
	waitHeld := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for held() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections wait, want %d", held(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	idle("127.0.0.2", gatewayPending)
	waitHeld(gatewayPerSource)
	for range 3 {
		tunnel("one pod idles its share")
	}
	// Enough pods to take every slot.
	for i := range gatewayPending/gatewayPerSource - 1 {
		idle(fmt.Sprintf("127.0.0.%d", 3+i), gatewayPerSource)
	}
	waitHeld(gatewayPending)
	for range 3 {
		tunnel(fmt.Sprintf("%d pods idle every slot", gatewayPending/gatewayPerSource))
	}
	// As many pods as slots, one connection each: the oldest gives way.
	for i := range gatewayPending {
		idle(fmt.Sprintf("127.1.%d.%d", i/200, 1+i%200), 1)
	}
	last := fmt.Sprintf("127.1.%d.%d", (gatewayPending-1)/200, 1+(gatewayPending-1)%200)
	deadline := time.Now().Add(time.Minute)
	for {
		g.mu.Lock()
		n := len(g.waiting[last])
		g.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the last pod's connection never waited")
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitHeld(gatewayPending)
	for range 3 {
		tunnel(fmt.Sprintf("%d pods idle a slot each", gatewayPending))
	}
}

// A run's end cuts the connections it has open through the gateway, as
// the end of its proxy does under bubblewrap.
func TestGatewayEndCutsARunsConnections(t *testing.T) {
	e := newEcho(t)
	up := fmt.Sprintf("allowed.test:%d", e.port())
	h := start(t, Config{Allow: []string{up}, TestingAllowLoopback: true, Resolver: newResolver(map[string][]string{"allowed.test": {"127.0.0.1"}})})
	g, pool := gateway(t)
	route, end := g.Open(h.sock)
	h.fwd = forwardTo(t, Dialer(route, pool))
	c, br, resp, err := h.connect(up)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", up, resp, err)
	}
	defer c.Close()
	io.WriteString(c, "ping")
	b := make([]byte, 4)
	if _, err := io.ReadFull(br, b); err != nil || string(b) != "ping" {
		t.Fatalf("echoed %q, %v", b, err)
	}
	end()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if n, err := br.Read(b); err == nil {
		t.Fatalf("read %q after the run ended; want the tunnel cut", b[:n])
	}
}

// One run holds at most gatewayPerRun connections through the gateway at
// once: the next is closed unanswered, and once one ends another may
// come.
func TestGatewayBoundsARunsConnections(t *testing.T) {
	h := start(t, Config{Allow: []string{"allowed.test:443"}, MaxConns: 4 * gatewayPerRun})
	g, pool := gateway(t)
	route, end := g.Open(h.sock)
	defer end()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range gatewayPerRun {
		c, err := Dialer(route, pool)(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	live := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, r := range g.runs {
			return r.live
		}
		return -1
	}
	deadline := time.Now().Add(time.Minute)
	for live() != gatewayPerRun {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections routed, want %d", live(), gatewayPerRun)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ask := func() string {
		c, err := Dialer(route, pool)(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
		b, _ := io.ReadAll(io.LimitReader(c, 12))
		return string(b)
	}
	if got := ask(); got != "" {
		t.Fatalf("connection %d answered %q; want it closed unanswered", gatewayPerRun+1, got)
	}
	held[0].Close()
	held = held[1:]
	for live() >= gatewayPerRun {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection was not given back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := ask(); !strings.HasPrefix(got, "HTTP/1.1") {
		t.Fatalf("after one ended, a connection answered %q; want the proxy's answer", got)
	}
}

// A command's many parallel connections wait their turn at the pod's
// forwarder rather than overrun the gateway's share of one pod: all are
// served.
func TestGatewayServesACommandsParallelConnections(t *testing.T) {
	e := newEcho(t)
	up := fmt.Sprintf("allowed.test:%d", e.port())
	h := start(t, Config{Allow: []string{up}, TestingAllowLoopback: true, Resolver: newResolver(map[string][]string{"allowed.test": {"127.0.0.1"}})})
	g, pool := gateway(t)
	route, end := g.Open(h.sock)
	defer end()
	h.fwd = forwardTo(t, Dialer(route, pool))
	const n = 4 * gatewayPerSource
	errs := make(chan error, n)
	for i := range n {
		go func() {
			c, br, resp, err := h.connect(up)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("CONNECT: %s", resp.Status)
				return
			}
			msg := fmt.Sprintf("conn %03d", i)
			io.WriteString(c, msg)
			b := make([]byte, len(msg))
			if _, err := io.ReadFull(br, b); err != nil || string(b) != msg {
				errs <- fmt.Errorf("echoed %q, %v", b, err)
				return
			}
			errs <- nil
		}()
	}
	failed := 0
	for range n {
		if err := <-errs; err != nil {
			failed++
			t.Log(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d parallel connections failed", failed, n)
	}
}

// When every slot waits, the slot given up is never of an address holding
// fewer than another (from an attack review: a pod holding 15 pushed out
// another pod's only connection).
func TestGatewayEvictsFromTheFullest(t *testing.T) {
	g := &Gateway{}
	conn := func() net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a
	}
	lone := g.hold("10.0.0.1", conn())
	for i := range 15 {
		for range gatewayPerSource {
			require.NotNil(t, g.hold(fmt.Sprintf("10.0.1.%d", i), conn()))
		}
	}
	for range 15 {
		require.NotNil(t, g.hold("10.0.2.1", conn()))
	}
	require.Equal(t, gatewayPending, g.held)
	require.NotNil(t, g.hold("10.0.2.1", conn()), "a newcomer holding fewer than the fullest")
	require.Len(t, g.waiting["10.0.2.1"], 16)
	require.Len(t, g.waiting["10.0.1.0"], 15, "the oldest of the fullest gave way")
	require.Nil(t, g.hold("10.0.2.1", conn()), "its share is taken")
	require.NotNil(t, g.hold("10.0.1.0", conn()))
	require.Len(t, g.waiting["10.0.1.0"], 16)
	require.Len(t, g.waiting["10.0.1.1"], 15, "the oldest of the fullest gave way")
	require.Equal(t, []*waiter{lone}, g.waiting["10.0.0.1"], "the lone connection waits on")
	require.Equal(t, gatewayPending, g.held)
}
