package egress

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// A sandbox kept elsewhere (a pod) has a network of its own, which its
// network policy closes to everything but its node's Gateway. The
// gateway serves TLS; each connection starts with the token of one run
// and is then relayed, byte for byte, to that run's proxy socket, as a
// bubblewrap sandbox's forwarder relays to it. A token is good while its
// run lasts; it is known only to the node and to the pod's executor,
// never to the command, which reaches the gateway through a forwarder
// the executor serves on the pod's loopback.

// Route is how a sandbox elsewhere reaches the proxy of one run: the
// gateway's address, the name its certificate carries, and the run's
// token.
type Route struct {
	Addr  string `json:"addr"`
	Name  string `json:"name"`
	Token string `json:"token"`
}

// tokenLen is the length of a token, in hex; a connection's preamble is
// the token and a newline.
const tokenLen = 64

// Gateway bounds.
const (
	gatewayHandshake = 10 * time.Second // TLS and the token, from accept
	gatewayPending   = 256              // connections not yet routed
	gatewayPerSource = 16               // of which from one address (one pod)
)

// Gateway relays connections from sandboxes elsewhere to the proxies
// of their runs.
type Gateway struct {
	// Addr is the address sandboxes reach the gateway at, and Name the
	// name in its certificate (TLS's Certificates[0]).
	Addr, Name string
	TLS        *tls.Config
	Logger     *slog.Logger

	mu      sync.Mutex
	runs    map[[32]byte]string // a token's hash: the run's proxy socket
	sources map[string]int      // connections not yet routed, by address
	// strangers counts connections without a live token since logged.
	strangers int
	logged    time.Time
	pending   chan struct{}
	once      sync.Once
}

// hold takes a pending slot for a connection from addr, unless that
// address holds its share already (a pod that opens connections and
// never speaks starves only itself) or every slot is taken.
func (g *Gateway) hold(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sources[addr] >= gatewayPerSource {
		return false
	}
	select {
	case g.pending <- struct{}{}:
	default:
		return false
	}
	if g.sources == nil {
		g.sources = map[string]int{}
	}
	g.sources[addr]++
	return true
}

// stranger counts a connection with no live run's token, logged at most
// once a minute (a pod could otherwise flood the node's log).
func (g *Gateway) stranger(log *slog.Logger, src string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.strangers++
	if now := time.Now(); now.Sub(g.logged) >= time.Minute {
		log.Warn("egress gateway: connections with no live run's token", "count", g.strangers, "last from", src)
		g.strangers, g.logged = 0, now
	}
}

// free gives back addr's pending slot.
func (g *Gateway) free(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	<-g.pending
	if g.sources[addr]--; g.sources[addr] <= 0 {
		delete(g.sources, addr)
	}
}

// Open routes a new token to the proxy socket of one run until the
// returned function is called.
func (g *Gateway) Open(socket string) (Route, func()) {
	var b [tokenLen / 2]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	key := sha256.Sum256([]byte(token))
	g.mu.Lock()
	if g.runs == nil {
		g.runs = map[[32]byte]string{}
	}
	g.runs[key] = socket
	g.mu.Unlock()
	return Route{Addr: g.Addr, Name: g.Name, Token: token}, func() {
		g.mu.Lock()
		delete(g.runs, key)
		g.mu.Unlock()
	}
}

// socket is the proxy socket of a token's run ("" when none).
func (g *Gateway) socket(token string) string {
	key := sha256.Sum256([]byte(token)) // looked up by hash: no timing of the token itself
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[key]
}

// Serve serves the gateway on ln until ctx ends.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	if g.TLS == nil || len(g.TLS.Certificates) == 0 {
		return errors.New("egress gateway: no certificate")
	}
	g.once.Do(func() { g.pending = make(chan struct{}, gatewayPending) })
	log := g.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return accept(ctx, ln, "egress gateway", func(ctx context.Context, c net.Conn) {
		src := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(src); err == nil {
			src = host
		}
		if g.hold(src) { // else: too many connections still to say whose they are
			g.relay(ctx, c, src, log)
		}
	})
}

// relay reads a connection's token, giving back its pending slot, and
// relays it to its run's proxy.
func (g *Gateway) relay(ctx context.Context, c net.Conn, src string, log *slog.Logger) {
	_ = c.SetDeadline(time.Now().Add(gatewayHandshake))
	tc := tls.Server(c, g.TLS)
	var pre [tokenLen + 1]byte
	_, err := io.ReadFull(tc, pre[:])
	g.free(src) // a slot is held for the handshake and the token only
	if err != nil || pre[tokenLen] != '\n' {
		return
	}
	socket := g.socket(string(pre[:tokenLen]))
	if socket == "" {
		g.stranger(log, src)
		return
	}
	_ = c.SetDeadline(time.Time{})
	var d net.Dialer
	u, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return // the run ended
	}
	pipe(ctx, tc, u)
}

// Dialer is how a sandbox elsewhere connects to its run's proxy: TLS to
// the gateway of route, whose certificate roots names, then the token.
func Dialer(route Route, roots *x509.CertPool) func(context.Context) (net.Conn, error) {
	conf := &tls.Config{RootCAs: roots, ServerName: route.Name, MinVersion: tls.VersionTLS13}
	return func(ctx context.Context) (net.Conn, error) {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: gatewayHandshake}, Config: conf}
		c, err := d.DialContext(ctx, "tcp", route.Addr)
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(c, route.Token+"\n"); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
}

// UnixDialer connects to a proxy's socket.
func UnixDialer(socket string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{Timeout: 10 * time.Second}
		return d.DialContext(ctx, "unix", socket)
	}
}
