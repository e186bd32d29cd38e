package egress

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzRequest sends arbitrary bytes to the proxy as a client would, with
// a resolver and an upstream in memory. The proxy never panics, answers
// only in HTTP, and never lets through a connection the allowlist and the
// address checks refuse.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		"CONNECT ok.example:443 HTTP/1.1\r\nHost: ok.example:443\r\n\r\nhello",
		"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
		"CONNECT loop.example:443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT [::ffff:198.51.100.9]:80 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT a.wild.example:443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://ok.example/path?q=1 HTTP/1.1\r\nHost: ok.example\r\nConnection: keep-alive\r\n\r\nGET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"POST http://198.51.100.9/ HTTP/1.1\r\nHost: 198.51.100.9\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET http://mixed.example/ HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: ok.example\r\n\r\n",
		"CONNECT ok.example HTTP/1.1\r\n\r\n",
		"GET https://ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
	} {
		f.Add([]byte(seed))
	}
	var (
		logs bytes.Buffer
		mu   sync.Mutex
		recs []Record
	)
	res := newResolver(map[string][]string{
		"ok.example":     {"198.51.100.7"},
		"a.wild.example": {"198.51.100.8"},
		"loop.example":   {"127.0.0.1"},
		"mixed.example":  {"198.51.100.7,10.0.0.1"},
	})
	allow := []string{"ok.example:443", "ok.example:80", "*.wild.example:443", "198.51.100.9:80", "loop.example:443", "mixed.example:80"}
	list, _ := ParseAllowlist(allow)
	p, err := New(Config{Permit: testNets,
		Allow:          allow,
		Resolver:       res,
		Logger:         slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil)),
		Record:         func(r Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
		HeaderTimeout:  time.Second,
		IdleTimeout:    time.Second,
		MaxHeaderBytes: 4096,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				_ = server.SetDeadline(time.Now().Add(time.Second))
				_, _ = server.Read(make([]byte, 4096))
				_, _ = io.WriteString(server, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
			return client, nil
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	ln, err := net.Listen("unix", dir+"/p.sock")
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	f.Cleanup(func() { cancel(); <-done })

	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("unix", dir+"/p.sock")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		go func() {
			_, _ = c.Write(in)
			_ = c.(*net.UnixConn).CloseWrite()
		}()
		out, _ := io.ReadAll(c)
		if len(out) > 0 && !bytes.HasPrefix(out, []byte("HTTP/1.")) {
			t.Fatalf("answer not HTTP: %q", out)
		}
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("the proxy panicked: %s", logs.String())
		}
		for _, r := range recs {
			if !r.Allowed {
				continue
			}
			tg, err := ParseTarget(netJoin(r.Host, r.Port), 0)
			if err != nil || !list.Allows(tg) {
				t.Fatalf("allowed a target off the list: %+v (%v)", r, err)
			}
			if r.Addr.IsValid() && p.forbidden(r.Addr) != "" {
				t.Fatalf("dialed a refused address: %+v", r)
			}
		}
		recs = recs[:0]
	})
}

func netJoin(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// FuzzParseTarget: parsing never panics, and a parsed target prints back
// to itself.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"example.com:443", "[::1]:80", "Example.COM.:8080", "1.2.3.4:1", "*.x.y:1", "a..b:1", "[fe80::1%25eth0]:80", "127.1:80", "x:65535"} {
		f.Add(s, uint16(0))
		f.Add(s, uint16(80))
	}
	list, _ := ParseAllowlist([]string{"example.com:443", "*.example.org:443", "198.51.100.7:80", "[2001:db8::1]:443"})
	f.Fuzz(func(t *testing.T, authority string, def uint16) {
		tg, err := ParseTarget(authority, def)
		if err != nil {
			return
		}
		back, err := ParseTarget(tg.String(), 0)
		if err != nil || back != tg {
			t.Fatalf("%q parsed to %+v, printed %q, parsed back to %+v (%v)", authority, tg, tg.String(), back, err)
		}
		if tg.Port == 0 || (tg.Name == "") == !tg.Addr.IsValid() {
			t.Fatalf("%q: target %+v", authority, tg)
		}
		if list.Allows(tg) && tg.Name != "" && tg.Name != "example.com" && !strings.HasSuffix(tg.Name, ".example.org") {
			t.Fatalf("%q allowed as %+v", authority, tg)
		}
		_ = Forbidden(tg.Addr)
		_ = display(authority)
	})
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
