package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkConnectLatency is the latency a command pays per connection
// through the proxy: dial, (CONNECT and its answer,) one byte there and
// back, close — directly to a local echo server, through the proxy's Unix
// socket, and through the in-sandbox forwarder then the socket (what a
// command's HTTPS_PROXY reaches), and through a pod's forwarder, the
// node's gateway (TLS and the run's token) then the socket, alternating in
// one loop. Reports the medians and the forwarder paths' added medians.
func BenchmarkConnectLatency(b *testing.B) {
	e := newEcho(b)
	port := strconv.Itoa(e.port())
	h := start(b, Config{
		Allow:                []string{"echo.example:" + port},
		Resolver:             newResolver(map[string][]string{"echo.example": {"127.0.0.1"}}),
		TestingAllowLoopback: true,
		MaxConns:             1024,
	})
	target := "echo.example:" + port
	direct := func() error {
		c, err := net.Dial("tcp", e.ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		return pingPong(c, bufio.NewReader(c))
	}
	proxied := func(network, addr string) func() error {
		return func() error {
			c, err := net.Dial(network, addr)
			if err != nil {
				return err
			}
			defer c.Close()
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil {
				return err
			}
			if resp.StatusCode != 200 {
				return fmt.Errorf("CONNECT: %s", resp.Status)
			}
			return pingPong(c, br)
		}
	}
	paths := []struct {
		name string
		do   func() error
		d    []time.Duration
	}{
		{name: "direct", do: direct},
		{name: "socket", do: proxied("unix", h.sock)},
		{name: "forwarder", do: proxied("tcp", h.fwd)},
		{name: "gateway", do: proxied("tcp", viaGateway(b, h.sock))},
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for j := range paths {
			p := &paths[(i+j)%len(paths)]
			t0 := time.Now()
			if err := p.do(); err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
			p.d = append(p.d, time.Since(t0))
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	for _, p := range paths {
		med[p.name] = float64(median(p.d).Nanoseconds()) / 1e3
		b.ReportMetric(med[p.name], p.name+"-µs")
	}
	b.ReportMetric(med["forwarder"]-med["direct"], "added-µs")
	b.ReportMetric(med["gateway"]-med["direct"], "pod-added-µs")
}

// viaGateway serves a gateway routing to the proxy at socket, and a pod's
// forwarder to it; it returns the forwarder's address.
func viaGateway(t testing.TB, socket string) string {
	g, pool := gateway(t)
	route, end := g.Open(socket)
	t.Cleanup(end)
	return forwardTo(t, Dialer(route, pool))
}

func pingPong(c net.Conn, br *bufio.Reader) error {
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	if b, err := br.ReadByte(); err != nil || b != 'x' {
		return fmt.Errorf("echo %q: %v", b, err)
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkThroughput moves 1 MiB per operation through one connection,
// downloading (from a source that writes without end) and uploading (to a
// sink), directly and through the forwarder, the Unix socket and the
// proxy's tunnel.
func BenchmarkThroughput(b *testing.B) {
	source, sink := server(b, func(c net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}), server(b, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	h := start(b, Config{
		Allow:                []string{"source.example:" + source, "sink.example:" + sink},
		Resolver:             newResolver(map[string][]string{"source.example": {"127.0.0.1"}, "sink.example": {"127.0.0.1"}}),
		TestingAllowLoopback: true,
	})
	const chunk = 1 << 20
	buf := make([]byte, chunk)
	for _, tc := range []struct {
		name, port, host string
		down             bool
	}{
		{"down/direct", source, "", true},
		{"down/proxied", source, "source.example", true},
		{"up/direct", sink, "", false},
		{"up/proxied", sink, "sink.example", false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var c net.Conn
			var r io.Reader
			if tc.host == "" {
				var err error
				if c, err = net.Dial("tcp", "127.0.0.1:"+tc.port); err != nil {
					b.Fatal(err)
				}
				r = c
			} else {
				var resp *http.Response
				var br *bufio.Reader
				var err error
				c, br, resp, err = h.connect(tc.host + ":" + tc.port)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%v %v", resp, err)
				}
				r = br
			}
			defer c.Close()
			b.SetBytes(chunk)
			b.ResetTimer()
			for b.Loop() {
				var err error
				if tc.down {
					_, err = io.ReadFull(r, buf)
				} else {
					_, err = c.Write(buf)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func server(b *testing.B, serve func(net.Conn)) (port string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
