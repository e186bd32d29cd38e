package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// resolver answers from a table; a name with several answers gives the
// next one at each lookup (the last one again once they run out).
type resolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver(table map[string][]string) *resolver {
	r := &resolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	for name, answers := range table {
		for _, a := range answers {
			var addrs []netip.Addr
			for _, s := range strings.Split(a, ",") {
				addrs = append(addrs, netip.MustParseAddr(s))
			}
			r.answers[name] = append(r.answers[name], addrs)
		}
	}
	return r
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	answers, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.calls[host], len(answers)-1)
	r.calls[host]++
	return append([]netip.Addr(nil), answers[i]...), nil
}

func (r *resolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// harness is a proxy served on a Unix socket, and a forwarder relaying a
// TCP port on 127.0.0.1 to it, as the sandbox will have them.
type harness struct {
	t      testing.TB
	p      *Proxy
	sock   string
	fwd    string // the forwarder's address: what HTTPS_PROXY names
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	recs   []Record
	once   sync.Once
}

// testNets are the documentation ranges the tests' upstreams resolve in,
// permitted explicitly as an operator would.
var testNets = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")}

func start(t testing.TB, cfg Config) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &harness{t: t, sock: filepath.Join(dir, "proxy.sock"), done: make(chan error, 2)}
	cfg.Record = func(r Record) { h.mu.Lock(); h.recs = append(h.recs, r); h.mu.Unlock() }
	if cfg.Permit == nil {
		cfg.Permit = testNets // the tests' "public" upstreams
	}
	if h.p, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	ul, err := net.Listen("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.fwd = tl.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.p.Serve(ctx, ul) }()
	go func() { h.done <- Forward(ctx, tl, UnixDialer(h.sock)) }()
	t.Cleanup(h.stop)
	return h
}

// stop ends the proxy and the forwarder; every record is in after it.
func (h *harness) stop() {
	h.once.Do(func() {
		h.cancel()
		for range 2 {
			select {
			case err := <-h.done:
				if err != nil {
					h.t.Errorf("serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				h.t.Fatal("proxy or forwarder did not stop")
			}
		}
	})
}

func (h *harness) records() []Record {
	h.stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Record(nil), h.recs...)
}

// client is an HTTP client whose proxy is the forwarder, for http and https.
func (h *harness) client(tr *http.Transport) *http.Client {
	if tr == nil {
		tr = &http.Transport{}
	}
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: h.fwd})
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// connect opens a tunnel through the forwarder by hand.
func (h *harness) connect(target string) (net.Conn, *bufio.Reader, *http.Response, error) {
	c, err := net.DialTimeout("tcp", h.fwd, 5*time.Second)
	if err != nil {
		return nil, nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, br, resp, nil
}

// echo is a TCP echo server on 127.0.0.1 that passes on half-closes and
// counts the connections it accepted.
type echo struct {
	ln       net.Listener
	accepted atomic.Int64
}

func newEcho(t testing.TB) *echo {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return echoOn(t, ln)
}

// echoOn serves the echo on ln.
func echoOn(t testing.TB, ln net.Listener) *echo {
	e := &echo{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return e
}

func (e *echo) port() int { return e.ln.Addr().(*net.TCPAddr).Port }

// only returns the one record, failing the test unless there is exactly one.
func only(t *testing.T, recs []Record) Record {
	t.Helper()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1: %+v", len(recs), recs)
	}
	return recs[0]
}
