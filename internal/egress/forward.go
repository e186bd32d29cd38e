package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Forward runs inside the sandbox: it accepts connections on ln (a TCP
// listener on the sandbox's loopback, where HTTPS_PROXY points) and
// relays each, byte for byte and both ways, to a connection of its own to
// the proxy, made by dial (UnixDialer to the proxy's socket bound into a
// bubblewrap sandbox; Dialer, through the gateway, from a pod). It
// returns nil once ctx ends, after closing ln and every relay, or the
// error that stopped ln.
func Forward(ctx context.Context, ln net.Listener, dial func(context.Context) (net.Conn, error)) error {
	return accept(ctx, ln, "egress forwarder", func(ctx context.Context, c net.Conn) {
		u, err := dial(ctx)
		if err != nil {
			return
		}
		defer u.Close()
		pipe(ctx, c, u)
	})
}

// accept serves ln until ctx ends, each connection by serve in a
// goroutine of its own, closed after; it returns nil once ctx ended and
// every serve returned, or the error that stopped ln.
func accept(ctx context.Context, ln net.Listener, what string, serve func(context.Context, net.Conn)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("%s: accepting: %w", what, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			serve(ctx, c)
		}()
	}
}

// pipe copies both ways between a and b, passing on half-closes, until
// both directions end, one fails or ctx ends; then both are closed. (The
// proxy's connections are wrapped, so its copies go through the buffer and
// are counted; the forwarder's may splice.)
func pipe(ctx context.Context, a, b net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer a.Close()
	defer b.Close()
	stop := context.AfterFunc(ctx, func() { a.Close(); b.Close() })
	defer stop()
	var wg sync.WaitGroup
	one := func(dst, src net.Conn) {
		defer wg.Done()
		buf := getBuf()
		defer putBuf(buf)
		if _, err := io.CopyBuffer(dst, src, *buf); err != nil {
			cancel()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
			cancel()
		}
	}
	wg.Add(2)
	go one(a, b)
	go one(b, a)
	wg.Wait()
}

// Env is the environment that points a command's clients at a forwarder
// listening on addr (HOST:PORT on the sandbox's loopback): HTTPS_PROXY and
// HTTP_PROXY in both cases (curl reads only the lower-case http_proxy),
// and NO_PROXY for the sandbox's own loopback, where a command's local
// servers are reached directly.
func Env(addr string) []string {
	proxy := "http://" + addr
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTPS_PROXY=" + proxy, "https_proxy=" + proxy,
		"HTTP_PROXY=" + proxy, "http_proxy=" + proxy,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}
