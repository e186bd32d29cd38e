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
	"slices"
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
	gatewayPerRun    = DefaultMaxConns  // routed connections of one run at once
	// dialsAtOnce bounds a pod's handshakes in progress, well under
	// gatewayPerSource: a command's parallel connections wait their turn
	// instead of being refused.
	dialsAtOnce = 8
)

// run is what the gateway knows of one run: its proxy socket, the
// connections routed to it, and the end of them all.
type run struct {
	socket string
	live   int
	ctx    context.Context
	end    context.CancelFunc
}

// Gateway relays connections from sandboxes elsewhere to the proxies
// of their runs.
type Gateway struct {
	// Addr is the address sandboxes reach the gateway at, and Name the
	// name in its certificate (TLS's Certificates[0]).
	Addr, Name string
	TLS        *tls.Config
	Logger     *slog.Logger

	mu   sync.Mutex
	runs map[[32]byte]*run // by the hash of the run's token
	// waiting are the connections not yet routed, by source address,
	// oldest first; held counts them all.
	waiting map[string][]*waiter
	held    int
	arrived uint64 // numbers the waiters in their order of arrival
	// strangers counts connections without a live token since logged.
	strangers int
	logged    time.Time
}

// waiter is a connection waiting to say whose it is.
type waiter struct {
	src string
	c   net.Conn
	n   uint64 // its arrival
}

// hold takes a pending slot for connection c from src, unless src holds
// its share already. When every slot is taken, one gives way: src's own
// oldest if no address holds more than src, else the oldest waiter of the
// addresses holding the most. An address is thus never pushed out while
// another holds more: pods that open connections and never speak, one or
// many, starve no other (a newcomer waits its turn at worst).
func (g *Gateway) hold(src string, c net.Conn) *waiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	mine := len(g.waiting[src])
	if mine >= gatewayPerSource {
		return nil
	}
	if g.held >= gatewayPending {
		var victim *waiter
		most := 0
		for _, ws := range g.waiting {
			if len(ws) > most || len(ws) == most && ws[0].n < victim.n {
				most, victim = len(ws), ws[0]
			}
		}
		if mine == most {
			victim = g.waiting[src][0]
		}
		g.drop(victim)
		_ = victim.c.Close()
	}
	if g.waiting == nil {
		g.waiting = map[string][]*waiter{}
	}
	g.arrived++
	w := &waiter{src: src, c: c, n: g.arrived}
	g.waiting[src] = append(g.waiting[src], w)
	g.held++
	return w
}

// drop takes w off the waiting (g.mu held); once only.
func (g *Gateway) drop(w *waiter) {
	ws := g.waiting[w.src]
	i := slices.Index(ws, w)
	if i < 0 {
		return
	}
	if ws = slices.Delete(ws, i, i+1); len(ws) == 0 {
		delete(g.waiting, w.src)
	} else {
		g.waiting[w.src] = ws
	}
	g.held--
}

// free gives back w's pending slot, unless it was taken from it.
func (g *Gateway) free(w *waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drop(w)
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

// Open routes a new token to the proxy socket of one run until the
// returned function is called, which also cuts the run's connections.
func (g *Gateway) Open(socket string) (Route, func()) {
	var b [tokenLen / 2]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	key := sha256.Sum256([]byte(token))
	r := &run{socket: socket}
	r.ctx, r.end = context.WithCancel(context.Background())
	g.mu.Lock()
	if g.runs == nil {
		g.runs = map[[32]byte]*run{}
	}
	g.runs[key] = r
	g.mu.Unlock()
	return Route{Addr: g.Addr, Name: g.Name, Token: token}, func() {
		g.mu.Lock()
		delete(g.runs, key)
		g.mu.Unlock()
		r.end()
	}
}

// route takes one of the connections of a token's run: nil when no live
// run has the token, or when the run has all it may have at once (then
// full says so); done gives it back.
func (g *Gateway) route(token string) (r *run, full bool, done func()) {
	key := sha256.Sum256([]byte(token)) // looked up by hash: no timing of the token itself
	g.mu.Lock()
	defer g.mu.Unlock()
	r = g.runs[key]
	if r == nil {
		return nil, false, nil
	}
	if r.live >= gatewayPerRun {
		return nil, true, nil
	}
	r.live++
	return r, false, func() {
		g.mu.Lock()
		r.live--
		g.mu.Unlock()
	}
}

// Serve serves the gateway on ln until ctx ends.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	if g.TLS == nil || len(g.TLS.Certificates) == 0 {
		return errors.New("egress gateway: no certificate")
	}
	log := g.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return accept(ctx, ln, "egress gateway", func(ctx context.Context, c net.Conn) {
		src := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(src); err == nil {
			src = host
		}
		if w := g.hold(src, c); w != nil { // else: too many connections still to say whose they are
			g.relay(ctx, c, w, log)
		}
	})
}

// relay reads a connection's token, giving back its pending slot, and
// relays it to its run's proxy.
func (g *Gateway) relay(ctx context.Context, c net.Conn, w *waiter, log *slog.Logger) {
	_ = c.SetDeadline(time.Now().Add(gatewayHandshake))
	tc := tls.Server(c, g.TLS)
	var pre [tokenLen + 1]byte
	_, err := io.ReadFull(tc, pre[:])
	g.free(w) // a slot is held for the handshake and the token only
	if err != nil || pre[tokenLen] != '\n' {
		return
	}
	r, full, done := g.route(string(pre[:tokenLen]))
	if r == nil {
		if !full {
			g.stranger(log, w.src)
		}
		return
	}
	defer done()
	_ = c.SetDeadline(time.Time{})
	// The run's end cuts its connections, as its proxy's close does
	// under bubblewrap.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()
	var d net.Dialer
	u, err := d.DialContext(ctx, "unix", r.socket)
	if err != nil {
		return // the run ended
	}
	pipe(ctx, tc, u)
}

// Dialer is how a sandbox elsewhere connects to its run's proxy: TLS to
// the gateway of route, whose certificate roots names, then the token. At
// most dialsAtOnce connections are in their handshake at once; the others
// wait their turn.
func Dialer(route Route, roots *x509.CertPool) func(context.Context) (net.Conn, error) {
	conf := &tls.Config{RootCAs: roots, ServerName: route.Name, MinVersion: tls.VersionTLS13}
	turns := make(chan struct{}, dialsAtOnce)
	return func(ctx context.Context) (net.Conn, error) {
		select {
		case turns <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-turns }()
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: gatewayHandshake}, Config: conf}
		ctx, cancel := context.WithTimeout(ctx, gatewayHandshake)
		defer cancel()
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
