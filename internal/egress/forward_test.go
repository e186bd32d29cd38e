package egress

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// unixEcho is an echo server on a Unix socket, passing on half-closes.
func unixEcho(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "echo.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*net.UnixConn).CloseWrite()
			}()
		}
	}()
	return path
}

func forwarder(t *testing.T, socket string) (ln net.Listener, cancel context.CancelFunc, done chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- Forward(ctx, ln, UnixDialer(socket)) }()
	t.Cleanup(cancel)
	return ln, cancel, done
}

// Each TCP connection gets a Unix connection of its own; bytes and
// half-closes pass both ways; ending the context closes the listener and
// every relay, and Forward returns nil.
func TestForward(t *testing.T) {
	ln, cancel, done := forwarder(t, unixEcho(t))
	addr := ln.Addr().String()
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	payload := bytes.Repeat([]byte("forward "), 200_000)
	go func() {
		a.Write(payload)
		a.(*net.TCPConn).CloseWrite()
	}()
	io.WriteString(b, "other")
	got, err := io.ReadAll(a)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, len(payload))
	}
	small := make([]byte, 5)
	if _, err := io.ReadFull(b, small); err != nil || string(small) != "other" {
		t.Fatalf("second connection: %q %v", small, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Forward: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Forward did not return")
	}
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := b.Read(small); err == nil {
		t.Error("a relay is still open after Forward returned")
	}
	// Asked of the listener itself: once it is closed its port is free,
	// and another test's listener may already hold it.
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the listener still accepts: %v", err)
	}
}

// With no proxy behind the socket, a connection is closed at once.
func TestForwardWithoutProxy(t *testing.T) {
	ln, _, _ := forwarder(t, filepath.Join(t.TempDir(), "absent.sock"))
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
		t.Fatalf("read %d, %v; want the connection closed", n, err)
	}
}

// A listener that fails (not because the context ended) is an error.
func TestForwardListenerError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := Forward(context.Background(), ln, UnixDialer("/nonexistent")); err == nil {
		t.Fatal("Forward on a closed listener returned nil")
	}
}

// Clients reading Env's variables send remote requests to the forwarder
// and keep loopback ones direct.
func TestEnv(t *testing.T) {
	vars := map[string]string{}
	for _, kv := range Env("127.0.0.1:3128") {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg := httpproxy.Config{HTTPSProxy: vars["HTTPS_PROXY"], HTTPProxy: vars["HTTP_PROXY"], NoProxy: vars["NO_PROXY"]}
	proxyFor := cfg.ProxyFunc()
	for _, tc := range []struct {
		url, want string
	}{
		{"https://proxy.golang.org/x", "http://127.0.0.1:3128"},
		{"http://deb.debian.org/", "http://127.0.0.1:3128"},
		{"http://localhost:8080/", ""},
		{"http://127.0.0.1:8080/", ""},
		{"http://[::1]:8080/", ""},
	} {
		u, _ := url.Parse(tc.url)
		got, err := proxyFor(u)
		if err != nil || (got == nil) != (tc.want == "") || got != nil && got.String() != tc.want {
			t.Errorf("%s: proxy %v, %v; want %q", tc.url, got, err, tc.want)
		}
	}
	for _, k := range []string{"https_proxy", "http_proxy", "no_proxy"} {
		if vars[k] != vars[strings.ToUpper(k)] {
			t.Errorf("%s differs from its upper case", k)
		}
	}
}
