package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"
)

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// An HTTPS request from a real client configured the way the sandbox's
// commands will be (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), through the
// forwarder and the Unix socket, to a real TLS server: the name is
// resolved by the proxy, the tunnel carries TLS end to end, and the
// connection is recorded when it ends.
func TestHTTPSThroughForwarderAndProxy(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s over %s", r.Host, r.Proto)
	}))
	defer ts.Close()
	port := portOf(t, ts.URL)
	h := start(t, Config{
		Allow:                []string{"example.com:" + port},
		Resolver:             newResolver(map[string][]string{"example.com": {"127.0.0.1"}}),
		TestingAllowLoopback: true,
	})
	env := httpproxy.Config{HTTPProxy: "http://" + h.fwd, HTTPSProxy: "http://" + h.fwd, NoProxy: "localhost"}
	proxyFor := env.ProxyFunc()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:             func(r *http.Request) (*url.URL, error) { return proxyFor(r.URL) },
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		DisableKeepAlives: true,
	}}
	resp, err := client.Get("https://example.com:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "hello example.com:" + port + " over HTTP/1.1"; string(body) != want {
		t.Fatalf("body %q, want %q", body, want)
	}
	r := only(t, h.records())
	if !r.Allowed || r.Method != "CONNECT" || r.Host != "example.com" || strconv.Itoa(r.Port) != port ||
		r.Addr != netip.MustParseAddr("127.0.0.1") || r.Status != 200 || r.Up < 200 || r.Down < 500 || r.Error != "" || r.Reason != "" {
		t.Errorf("record %+v", r)
	}
	if r.Start.IsZero() || r.Duration <= 0 {
		t.Errorf("record without start or duration: %+v", r)
	}
}

// A plain HTTP request goes upstream in origin form with the checked
// authority as its Host, without the proxy's own headers; the upstream's
// status is recorded.
func TestPlainHTTPForwarded(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Up", "yes")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "made")
	}))
	defer ts.Close()
	port := portOf(t, ts.URL)
	h := start(t, Config{
		Allow:                []string{"api.example:" + port},
		Resolver:             newResolver(map[string][]string{"api.example": {"127.0.0.1"}}),
		TestingAllowLoopback: true,
	})
	req, _ := http.NewRequest(http.MethodPost, "http://api.example:"+port+"/v1/items?x=1", strings.NewReader("payload"))
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
	req.Header.Set("Connection", "X-Drop")
	req.Header.Set("X-Drop", "hop")
	req.Header.Set("X-Keep", "end-to-end")
	resp, err := h.client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != "made" || resp.Header.Get("X-Up") != "yes" {
		t.Fatalf("response %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if got.RequestURI != "/v1/items?x=1" || got.Host != "api.example:"+port || string(gotBody) != "payload" {
		t.Errorf("upstream saw %s %s Host %s body %q", got.Method, got.RequestURI, got.Host, gotBody)
	}
	for _, hdr := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Drop"} {
		if v := got.Header.Get(hdr); v != "" {
			t.Errorf("upstream received %s: %s", hdr, v)
		}
	}
	if got.Header.Get("X-Keep") != "end-to-end" {
		t.Errorf("end-to-end header lost: %v", got.Header)
	}
	r := only(t, h.records())
	if !r.Allowed || r.Method != "POST" || r.Host != "api.example" || r.Status != http.StatusCreated || r.Up < 50 || r.Down < 50 {
		t.Errorf("record %+v", r)
	}
}

// Every refusal answers the command in words it can read, opens no
// connection, and is recorded with its reason.
func TestRefusals(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	var dialed []string
	h := start(t, Config{
		Allow: []string{
			"loop.example:" + port, "private.example:443", "meta.example:80", "mixed.example:443",
			"cgnat.example:443", "v6.example:443", "169.254.169.254:80", "127.0.0.1:" + port, "listed.example:443",
		},
		Resolver: newResolver(map[string][]string{
			"loop.example":    {"127.0.0.1"},
			"private.example": {"10.0.0.5"},
			"meta.example":    {"169.254.169.254"},
			"mixed.example":   {"198.51.100.7,192.168.1.20"},
			"cgnat.example":   {"100.64.1.1"},
			"v6.example":      {"::ffff:127.0.0.1"},
			"listed.example":  {"198.51.100.7"},
		}),
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dialed = append(dialed, address)
			return nil, errors.New("no dial expected")
		},
	})
	for _, tc := range []struct {
		url, host, reason string
	}{
		{"https://evil.example/", "evil.example", "evil.example:443 is not on its network allowlist"},
		{"http://evil.example/x", "evil.example", "evil.example:80 is not on its network allowlist"},
		{"https://listed.example:8443/", "listed.example", "listed.example:8443 is not on its network allowlist"},
		{"https://198.51.100.7/", "198.51.100.7", "IP address 198.51.100.7 is not on its network allowlist"},
		{"http://[2001:db8::1]/", "2001:db8::1", "IP address 2001:db8::1 is not on its network allowlist"},
		{"https://loop.example:" + port + "/", "loop.example", "loop.example resolves to 127.0.0.1, a loopback address"},
		{"http://127.0.0.1:" + port + "/", "127.0.0.1", "127.0.0.1 is a loopback address"},
		{"https://private.example/", "private.example", "private.example resolves to 10.0.0.5, a private address"},
		{"http://meta.example/latest/meta-data/", "meta.example", "meta.example resolves to 169.254.169.254, a cloud metadata address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "169.254.169.254 is a cloud metadata address"},
		{"https://mixed.example/", "mixed.example", "mixed.example resolves to 192.168.1.20, a private address"},
		{"https://cgnat.example/", "cgnat.example", "cgnat.example resolves to 100.64.1.1, a shared (CGNAT) address"},
		{"https://v6.example/", "v6.example", "v6.example resolves to 127.0.0.1, a loopback address"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			want := "network to " + tc.host + " is not allowed by this agent's environment"
			resp, err := h.client(nil).Get(tc.url)
			if strings.HasPrefix(tc.url, "https") {
				// The tunnel is refused with a 403 whose reason phrase is the
				// message: what the client reports.
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("error %v, want %q (%s)", err, want, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(body), want) || !strings.Contains(string(body), tc.reason) {
				t.Fatalf("%d %q, want 403 %q (%s)", resp.StatusCode, body, want, tc.reason)
			}
		})
	}
	recs := h.records()
	if len(recs) != 13 {
		t.Fatalf("%d records, want 13: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Allowed || r.Reason == "" || r.Status != http.StatusForbidden || r.Up != 0 || r.Down != 0 || r.Host == "" || r.Port == 0 {
			t.Errorf("record %+v", r)
		}
	}
	if len(dialed) != 0 || e.accepted.Load() != 0 {
		t.Errorf("refused requests dialed %v; the loopback server accepted %d", dialed, e.accepted.Load())
	}
}

// By default, loopback is refused even when the name or the literal is on
// the list; the test-only option is what lets the other tests reach their
// upstreams on 127.0.0.1.
func TestLoopbackRefusedByDefault(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	cfg := Config{
		Allow:    []string{"local.example:" + port, "127.0.0.1:" + port, "[::1]:" + port},
		Resolver: newResolver(map[string][]string{"local.example": {"127.0.0.1"}}),
	}
	h := start(t, cfg)
	for _, target := range []string{"local.example:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		c, _, resp, err := h.connect(target)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, "loopback") {
			t.Errorf("%s: %s", target, resp.Status)
		}
	}
	if n := e.accepted.Load(); n != 0 {
		t.Errorf("loopback server accepted %d connections", n)
	}
	// The dialer checks the socket's address again just before connecting.
	p, _ := New(Config{})
	if c, err := p.cfg.Dial(context.Background(), "tcp", "127.0.0.1:"+port); err == nil {
		c.Close()
		t.Error("the default dialer connected to loopback")
	}
	cfg.TestingAllowLoopback = true
	h2 := start(t, cfg)
	c, br, resp, err := h2.connect("local.example:" + port)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("with TestingAllowLoopback: %v %v", resp, err)
	}
	defer c.Close()
	io.WriteString(c, "ping")
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo %q %v", got, err)
	}
}

// DNS rebinding: the proxy resolves a name once per connection and dials
// the very address it checked. A name that answers a public address, then
// a private one, is connected to the public address the first time and
// refused the second; it is never dialed at the private address.
func TestRebindingDialsTheCheckedAddress(t *testing.T) {
	e := newEcho(t)
	res := newResolver(map[string][]string{"rebind.example": {"198.51.100.7", "127.0.0.1"}})
	var dialed []string
	h := start(t, Config{
		Allow:    []string{"rebind.example:443"},
		Resolver: res,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dialed = append(dialed, address)
			// The public address stands in for the echo server.
			var d net.Dialer
			return d.DialContext(ctx, network, e.ln.Addr().String())
		},
	})
	c, br, resp, err := h.connect("rebind.example:443")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first: %v %v", resp, err)
	}
	io.WriteString(c, "x")
	b, _ := br.ReadByte()
	c.Close()
	if b != 'x' {
		t.Fatalf("echo %q", b)
	}
	if n := res.lookups("rebind.example"); n != 1 {
		t.Errorf("%d lookups for one connection, want 1", n)
	}
	c, _, resp, err = h.connect("rebind.example:443")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, "resolves to 127.0.0.1, a loopback address") {
		t.Fatalf("second: %s", resp.Status)
	}
	if want := []string{"198.51.100.7:443"}; fmt.Sprint(dialed) != fmt.Sprint(want) {
		t.Errorf("dialed %v, want %v", dialed, want)
	}
	recs := h.records()
	slices.SortFunc(recs, func(a, b Record) int { return a.Start.Compare(b.Start) })
	if len(recs) != 2 || !recs[0].Allowed || recs[0].Addr != netip.MustParseAddr("198.51.100.7") || recs[0].Up != 1 || recs[0].Down != 1 ||
		recs[1].Allowed || recs[1].Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("records %+v", recs)
	}
}

// Half-closes pass through the forwarder and the tunnel: the upstream
// sees the end of the request and still answers.
func TestTunnelHalfClose(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true})
	c, br, resp, err := h.connect("127.0.0.1:" + port)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer c.Close()
	payload := bytes.Repeat([]byte("0123456789"), 100_000)
	go func() {
		c.Write(payload)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(br)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(payload))
	}
	r := only(t, h.records())
	if r.Up != int64(len(payload)) || r.Down != int64(len(payload)) || r.Error != "" {
		t.Errorf("record %+v", r)
	}
}

// Bytes the client sends right behind the CONNECT, before the answer (a
// TLS hello sent eagerly), reach the upstream.
func TestTunnelKeepsBytesSentWithTheConnect(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true})
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: x\r\n\r\nearly", port)
	c.(*net.UnixConn).CloseWrite()
	got, _ := io.ReadAll(c)
	if want := "HTTP/1.1 200 Connection established\r\n\r\nearly"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A tunnel with no byte either way for the idle timeout is closed and
// recorded as such; one with traffic stays open.
func TestIdleTimeout(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true, IdleTimeout: 500 * time.Millisecond})
	busy, bbr, resp, err := h.connect("127.0.0.1:" + port)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer busy.Close()
	quiet, qbr, resp, err := h.connect("127.0.0.1:" + port)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer quiet.Close()
	began := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		io.Copy(io.Discard, qbr)
		closed <- time.Since(began)
	}()
	for range 12 {
		time.Sleep(100 * time.Millisecond)
		io.WriteString(busy, "k")
		if b, err := bbr.ReadByte(); err != nil || b != 'k' {
			t.Fatalf("the busy tunnel broke after %s: %v", time.Since(began), err)
		}
	}
	select {
	case d := <-closed:
		if d < 450*time.Millisecond {
			t.Errorf("the quiet tunnel closed after %s, before its idle timeout", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the quiet tunnel is still open")
	}
	busy.Close()
	recs := h.records()
	idle := 0
	for _, r := range recs {
		if r.Error == "idle for 500ms" {
			idle++
		}
	}
	if len(recs) != 2 || idle != 1 {
		t.Errorf("records %+v, want one idle", recs)
	}
}

// Past MaxConns, a connection is told why (503) and recorded refused;
// once one ends, the next is served.
func TestMaxConns(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	target := "127.0.0.1:" + port
	h := start(t, Config{Allow: []string{target}, TestingAllowLoopback: true, MaxConns: 2})
	var open []io.Closer
	for range 2 {
		c, _, resp, err := h.connect(target)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", resp, err)
		}
		open = append(open, c)
	}
	c, _, resp, err := h.connect(target)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(resp.Status, "too many connections at once (limit 2)") {
		t.Fatalf("third: %s", resp.Status)
	}
	open[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, _, resp, err := h.connect(target)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot freed: %s", resp.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	open[1].Close()
	refused := 0
	for _, r := range h.records() {
		if !r.Allowed && strings.Contains(r.Reason, "too many connections") && r.Status == http.StatusServiceUnavailable {
			refused++
		}
	}
	if refused < 1 {
		t.Error("no refusal recorded for the connection over the limit")
	}
}

// Requests that are not proxy requests, or malformed, are answered 400
// (or 431 for an oversized header) and never dialed.
func TestMalformedRequests(t *testing.T) {
	var dialed int
	h := start(t, Config{
		Allow:          []string{"ok.example:443", "ok.example:80"},
		Resolver:       newResolver(map[string][]string{"ok.example": {"198.51.100.7"}}),
		MaxHeaderBytes: 1024,
		HeaderTimeout:  300 * time.Millisecond,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			dialed++
			return nil, errors.New("no dial expected")
		},
	})
	for _, tc := range []struct {
		raw    string
		status int
	}{
		{"GET / HTTP/1.1\r\nHost: ok.example\r\n\r\n", 400},
		{"CONNECT ok.example HTTP/1.1\r\nHost: ok.example\r\n\r\n", 400},
		{"CONNECT /ok.example:443 HTTP/1.1\r\nHost: ok.example:443\r\n\r\n", 400},
		{"GET https://ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n", 400},
		{"GET ftp://ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n", 400},
		{"CONNECT ok.example:0 HTTP/1.1\r\nHost: ok.example\r\n\r\n", 400},
		{"CONNECT ok.exa\x00mple:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET http://ok.example/ HTTP/1.1\r\nHost: ok.example\r\nX-Big: " + strings.Repeat("a", 8000) + "\r\n\r\n", 431},
		{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400},
		{"GET http://ok.example/ HTTP/1.1\r\nHost: ok.ex", 0}, // cut off at the header timeout
		{"GET http://ok.example/ HTTP/9.9\r\n\r\n", 505},
	} {
		c, err := net.Dial("unix", h.sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, tc.raw)
		began := time.Now()
		buf := make([]byte, 512)
		n, _ := io.ReadAtLeast(c, buf, 12)
		c.Close()
		if tc.status == 0 {
			if n != 0 || time.Since(began) > 3*time.Second {
				t.Errorf("%q: %q after %s, want the connection closed at the header timeout", tc.raw, buf[:n], time.Since(began))
			}
			continue
		}
		if got := string(buf[:n]); !strings.HasPrefix(got, "HTTP/1.1 "+strconv.Itoa(tc.status)) {
			t.Errorf("%q: %q, want %d", tc.raw, got, tc.status)
		}
	}
	if dialed != 0 {
		t.Errorf("malformed requests dialed %d times", dialed)
	}
}

// An upstream that does not answer within the connect timeout is a 502
// with the reason, recorded as allowed but failed.
func TestConnectTimeout(t *testing.T) {
	h := start(t, Config{
		Allow:          []string{"slow.example:443"},
		Resolver:       newResolver(map[string][]string{"slow.example": {"198.51.100.7"}}),
		ConnectTimeout: 200 * time.Millisecond,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	began := time.Now()
	c, _, resp, err := h.connect("slow.example:443")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(resp.Status, "connecting to slow.example:443") || time.Since(began) > 3*time.Second {
		t.Fatalf("%s after %s", resp.Status, time.Since(began))
	}
	r := only(t, h.records())
	if !r.Allowed || !strings.Contains(r.Error, "deadline exceeded") || r.Status != http.StatusBadGateway {
		t.Errorf("record %+v", r)
	}
}

// An upstream's response header past the limit is a 502, never buffered
// whole.
func TestUpstreamHeaderLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		for range 10_000 {
			if _, err := io.WriteString(c, "X-Pad: "+strings.Repeat("p", 100)+"\r\n"); err != nil {
				return
			}
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true, MaxHeaderBytes: 4096})
	resp, err := h.client(nil).Get("http://127.0.0.1:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "header over 4096 bytes") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if r := only(t, h.records()); !r.Allowed || r.Down > 4096+4096+512 {
		t.Errorf("record %+v", r)
	}
}

// Ending Serve closes open tunnels, and each is recorded before Serve
// returns.
func TestServeRecordsOpenTunnelsWhenItEnds(t *testing.T) {
	e := newEcho(t)
	port := strconv.Itoa(e.port())
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true})
	c, br, resp, err := h.connect("127.0.0.1:" + port)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer c.Close()
	io.WriteString(c, "abc")
	io.ReadFull(br, make([]byte, 3))
	r := only(t, h.records()) // stops the proxy
	if r.Up != 3 || r.Down != 3 {
		t.Errorf("record %+v", r)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("tunnel still open after Serve returned: %v", err)
	}
}

func TestNewRefusesABadAllowlist(t *testing.T) {
	if _, err := New(Config{Allow: []string{"good.example:443", "*.com:443"}}); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("err %v", err)
	}
}

// Records take their times from the injected clock.
func TestRecordUsesTheClock(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var calls time.Duration
	h := start(t, Config{Now: func() time.Time { calls++; return base.Add(calls * time.Second) }})
	c, _, resp, err := h.connect("nowhere.example:443")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("%s", resp.Status)
	}
	r := only(t, h.records())
	if !r.Start.Equal(base.Add(time.Second)) || r.Duration != time.Second {
		t.Errorf("start %s, duration %s", r.Start, r.Duration)
	}
}

// A name with several addresses: one that never answers gets only its
// share of the connect timeout, and the next is dialed.
func TestDialTriesEachCheckedAddress(t *testing.T) {
	e := newEcho(t)
	var dialed []string
	h := start(t, Config{
		Allow:          []string{"two.example:443"},
		Resolver:       newResolver(map[string][]string{"two.example": {"2001:db8::7,198.51.100.7"}}),
		ConnectTimeout: 4 * time.Second,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dialed = append(dialed, address)
			if strings.HasPrefix(address, "[") {
				<-ctx.Done() // a black hole
				return nil, ctx.Err()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, e.ln.Addr().String())
		},
	})
	began := time.Now()
	c, _, resp, err := h.connect("two.example:443")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	c.Close()
	if d := time.Since(began); d > 3500*time.Millisecond {
		t.Errorf("took %s", d)
	}
	if fmt.Sprint(dialed) != "[[2001:db8::7]:443 198.51.100.7:443]" {
		t.Errorf("dialed %v", dialed)
	}
	if r := only(t, h.records()); r.Addr != netip.MustParseAddr("198.51.100.7") {
		t.Errorf("record %+v", r)
	}
}

// Plain HTTP: an upload answered 100 Continue, and a large chunked
// response streamed back whole.
func TestPlainHTTPStreams(t *testing.T) {
	big := bytes.Repeat([]byte("stream "), 300_000)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Got", strconv.FormatInt(n, 10))
		for i := 0; i < len(big); i += 100_000 {
			w.Write(big[i:min(i+100_000, len(big))])
			w.(http.Flusher).Flush()
		}
	}))
	defer ts.Close()
	port := portOf(t, ts.URL)
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true})
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/up", bytes.NewReader(bytes.Repeat([]byte("u"), 1<<20)))
	req.Header.Set("Expect", "100-continue")
	resp, err := h.client(&http.Transport{ExpectContinueTimeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(body, big) || resp.Header.Get("X-Got") != strconv.Itoa(1<<20) {
		t.Fatalf("%d bytes back (%v), upstream got %s", len(body), err, resp.Header.Get("X-Got"))
	}
	r := only(t, h.records())
	if r.Up < 1<<20 || r.Down < int64(len(big)) || r.Status != 200 || r.Error != "" {
		t.Errorf("record %+v", r)
	}
}

// Plain HTTP: an upstream that stops sending mid-body is cut at the idle
// timeout, and the record says so.
func TestPlainHTTPIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-release
	}))
	defer ts.Close()
	defer close(release)
	port := portOf(t, ts.URL)
	h := start(t, Config{Allow: []string{"127.0.0.1:" + port}, TestingAllowLoopback: true, IdleTimeout: 300 * time.Millisecond})
	resp, err := h.client(nil).Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || string(body) != "partial" {
		t.Fatalf("%q, %v: want the body cut", body, err)
	}
	if r := only(t, h.records()); r.Error != "idle for 300ms" || r.Status != 200 {
		t.Errorf("record %+v", r)
	}
}

// The attack: the proxy dialed the node's own non-loopback interface when
// its address was on the list, reaching services the node keeps from its
// sandboxes. A node's own address, like the documentation and
// benchmarking ranges, is refused unless the operator permits it.
func TestNodesOwnAddressesRefused(t *testing.T) {
	own, err := InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var node netip.Addr
	for _, a := range own {
		if a.Is4() && !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			node = a
			break
		}
	}
	if !node.IsValid() {
		t.Skip("this machine has no non-loopback IPv4 address to listen on")
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(node, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	e := echoOn(t, ln)
	target := ln.Addr().String()

	h := start(t, Config{Allow: []string{target}, Permit: []netip.Prefix{}})
	c, _, resp, err := h.connect(target)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if resp.StatusCode != http.StatusForbidden || e.accepted.Load() != 0 {
		t.Fatalf("the node's own %s: %s, %d accepted", node, resp.Status, e.accepted.Load())
	}

	// Control: permitted explicitly, the same address is reached.
	h = start(t, Config{Allow: []string{target}, Permit: []netip.Prefix{netip.PrefixFrom(node, 32)}})
	c, br, resp, err := h.connect(target)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("permitted: %v %v", resp, err)
	}
	io.WriteString(c, "x")
	b, _ := br.ReadByte()
	c.Close()
	if b != 'x' {
		t.Fatalf("echo %q", b)
	}

	// A public address that is this node's is refused as such, and only
	// while it is.
	e2 := newEcho(t)
	var mine atomic.Pointer[[]netip.Addr]
	mine.Store(&[]netip.Addr{})
	cfg := Config{Allow: []string{"self.example:443"},
		Resolver: newResolver(map[string][]string{"self.example": {"93.184.215.14"}}),
		Own:      func() ([]netip.Addr, error) { return *mine.Load(), nil },
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, e2.ln.Addr().String())
		}}
	h = start(t, cfg)
	mine.Store(&[]netip.Addr{netip.MustParseAddr("93.184.215.14")})
	c, _, resp, err = h.connect("self.example:443")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, ClassNode) {
		t.Fatalf("an address of this node's: %s", resp.Status)
	}
	// Nor through a translator to it (NAT64, 6to4): the review's attack.
	for _, via := range []string{"64:ff9b::5db8:d70e", "2002:5db8:d70e::1"} {
		h2 := start(t, Config{Allow: []string{"[" + via + "]:443"}, Own: cfg.Own, Dial: cfg.Dial})
		c, _, resp, err := h2.connect("[" + via + "]:443")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, ClassNode) {
			t.Fatalf("%s, translated to this node's address: %s", via, resp.Status)
		}
	}
	mine.Store(&[]netip.Addr{})
	c, _, resp, err = h.connect("self.example:443")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("no longer this node's: %v %v", resp, err)
	}
	c.Close()
}
