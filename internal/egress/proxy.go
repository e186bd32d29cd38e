package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
)

// Defaults for the zero values of Config's bounds.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultMaxConns       = 64
	DefaultMaxHeaderBytes = 32 << 10
	// overflow connections beyond MaxConns are accepted only to be told
	// the proxy is full (503); past those, the proxy stops accepting.
	overflow = 8
)

// Resolver resolves a name to addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Proxy.
type Config struct {
	// Allow is the allowlist: HOST:PORT entries (see Allowlist).
	Allow []string
	// Resolver resolves names; net.DefaultResolver when nil.
	Resolver Resolver
	// Dial connects to an address, always an IP:PORT the proxy checked;
	// a net.Dialer (whose socket is checked again before connecting) when
	// nil.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Record receives every connection when it ends. Calls are serialized.
	Record func(Record)
	// Logger logs the proxy's own troubles (never a command's traffic);
	// discarded when nil.
	Logger *slog.Logger
	// Now is the clock of records; time.Now when nil.
	Now func() time.Time

	// ConnectTimeout bounds resolving and connecting; IdleTimeout ends a
	// connection with no byte either way for that long; HeaderTimeout
	// bounds reading a request's header; MaxConns bounds the connections
	// open at once (more wait to be accepted); MaxHeaderBytes bounds a
	// request's header and an upstream response's header.
	ConnectTimeout time.Duration
	IdleTimeout    time.Duration
	HeaderTimeout  time.Duration
	MaxConns       int
	MaxHeaderBytes int

	// Permit lets commands reach these ranges although their addresses are
	// documentation, benchmarking or this node's own, which are otherwise
	// refused; every other refused class stays refused.
	Permit []netip.Prefix
	// Own lists this node's own addresses (its interfaces' when nil),
	// asked at each check: an address added after start is refused too.
	Own func() ([]netip.Addr, error)

	// TestingAllowLoopback lets connections reach loopback addresses, which
	// are otherwise always refused. For tests only, whose upstreams listen
	// on 127.0.0.1; every other refused class stays refused.
	TestingAllowLoopback bool
}

// Proxy is the egress proxy. It is safe for concurrent use; one Proxy may
// serve several listeners, which share its connection bound.
type Proxy struct {
	cfg   Config
	allow Allowlist
	log   *slog.Logger
	slots chan struct{} // MaxConns
	spare chan struct{} // overflow

	recordMu sync.Mutex
}

// New checks the configuration (every allowlist entry) and makes a Proxy.
func New(cfg Config) (*Proxy, error) {
	allow, err := ParseAllowlist(cfg.Allow)
	if err != nil {
		return nil, fmt.Errorf("egress allowlist: %w", err)
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Own == nil {
		cfg.Own = InterfaceAddrs
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	p := &Proxy{cfg: cfg, allow: allow, log: cfg.Logger, slots: make(chan struct{}, cfg.MaxConns), spare: make(chan struct{}, overflow)}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.cfg.Dial == nil {
		d := &net.Dialer{ControlContext: p.control}
		p.cfg.Dial = d.DialContext
	}
	return p, nil
}

// control checks the socket's destination once more just before it
// connects: whatever dialed it, only a checked class of address is reached.
func (p *Proxy) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: dialing %q, not an address: %w", address, err)
	}
	if class := p.forbidden(ap.Addr()); class != "" {
		return fmt.Errorf("egress: %s is a %s address", ap.Addr(), class)
	}
	return nil
}

func (p *Proxy) forbidden(a netip.Addr) string {
	a = a.Unmap()
	c := Forbidden(a)
	if c == ClassLoopback && p.cfg.TestingAllowLoopback {
		return ""
	}
	if c == "" {
		own, err := p.cfg.Own()
		if err != nil {
			return ClassNode + " (this node's addresses are unknown: " + err.Error() + ")"
		}
		v4, translated := embedded(a)
		for _, o := range own {
			if o.Unmap() == a || translated && o.Unmap() == v4 {
				c = ClassNode
			}
		}
	}
	if c == ClassDocumentation || c == ClassBenchmarking || c == ClassNode {
		for _, p := range p.cfg.Permit {
			if p.Contains(a) {
				return ""
			}
		}
	}
	return c
}

// InterfaceAddrs are this node's own addresses: those of its network
// interfaces.
func InterfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, x := range addrs {
		if n, ok := x.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}

// Serve serves the proxy on ln until ctx ends (or ln fails), then closes
// ln and every connection, and returns once each has been recorded: nil
// when ctx ended it.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &serving{p: p, ctx: ctx}
	s.cond.L = &s.mu
	ll := &limitListener{Listener: ln, slots: p.slots, spare: p.spare, done: make(chan struct{})}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: p.cfg.HeaderTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		MaxHeaderBytes:    p.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ll) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	_ = srv.Close()
	if err == nil {
		err = <-errc
	}
	s.wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("egress proxy: %w", err)
}

type connKey struct{}

// serving is one Serve call: it counts the handlers running, so Serve
// returns only after each has recorded its connection.
type serving struct {
	p       *Proxy
	ctx     context.Context // Serve's
	mu      sync.Mutex
	cond    sync.Cond
	running int
	closing bool
}

func (s *serving) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.running++
	return true
}

func (s *serving) leave() {
	s.mu.Lock()
	s.running--
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *serving) wait() {
	s.mu.Lock()
	s.closing = true
	for s.running > 0 {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

func (s *serving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		w.Header().Set("Connection", "close")
		http.Error(w, "the network proxy is closing", http.StatusServiceUnavailable)
		return
	}
	defer s.leave()
	p := s.p
	c, _ := r.Context().Value(connKey{}).(*limitedConn)
	if c == nil {
		http.Error(w, "no connection", http.StatusInternalServerError)
		return
	}
	rec := Record{Start: p.cfg.Now(), Method: r.Method}
	defer func() {
		rec.Duration = p.cfg.Now().Sub(rec.Start)
		p.record(rec)
	}()
	connect := r.Method == http.MethodConnect
	var (
		t   Target
		err error
	)
	switch {
	case connect:
		t, err = ParseTarget(r.RequestURI, 0)
	case r.URL.Scheme == "http" && r.URL.Host != "":
		t, err = ParseTarget(r.URL.Host, 80)
	case r.URL.IsAbs():
		err = fmt.Errorf("only http:// URLs are forwarded; %s:// goes through CONNECT (HTTPS_PROXY)", r.URL.Scheme)
	default:
		err = errors.New("this is a proxy: requests name their destination (CONNECT HOST:PORT, or an absolute http:// URL)")
	}
	if err != nil {
		rec.Reason = "malformed request: " + err.Error()
		rec.Status = http.StatusBadRequest
		p.answer(w, connect, rec.Status, "bad proxy request: "+err.Error())
		return
	}
	rec.Host, rec.Port = t.Host(), int(t.Port)
	if c.over {
		rec.Reason = fmt.Sprintf("too many connections at once (limit %d)", p.cfg.MaxConns)
		rec.Status = http.StatusServiceUnavailable
		w.Header().Set("Connection", "close")
		p.answer(w, connect, rec.Status, "network to "+display(t.Host())+" refused: "+rec.Reason+" through this agent's network proxy; retry when others end")
		return
	}
	// A tunnel lives on Serve's context: the request's ends when the server
	// reads the end of the client's stream, and a client may send its first
	// bytes and half-close before the tunnel is up.
	ctx := r.Context()
	if connect {
		ctx = s.ctx
	}
	addrs, reason, bad, err := p.check(ctx, t)
	switch {
	case reason != "":
		rec.Reason, rec.Addr, rec.Status = reason, bad, http.StatusForbidden
		p.answer(w, connect, rec.Status, Refusal(t.Host(), reason))
		return
	case err != nil:
		rec.Allowed, rec.Error, rec.Status = true, err.Error(), http.StatusBadGateway
		p.answer(w, connect, rec.Status, err.Error())
		return
	}
	rec.Allowed = true
	up, addr, err := p.dial(ctx, t, addrs)
	if err != nil {
		rec.Error, rec.Status = err.Error(), http.StatusBadGateway
		p.answer(w, connect, rec.Status, err.Error())
		return
	}
	rec.Addr = addr
	if connect {
		p.tunnel(ctx, w, c, up, &rec)
	} else {
		p.forward(ctx, w, r, c, up, t, &rec)
	}
}

func (p *Proxy) record(r Record) {
	if p.cfg.Record == nil {
		return
	}
	p.recordMu.Lock()
	defer p.recordMu.Unlock()
	p.cfg.Record(r)
}

// Refusal is the message a command receives for a refused destination.
func Refusal(host, reason string) string {
	return "network to " + display(host) + " is not allowed by this agent's environment (" + reason + ")"
}

// check applies the allowlist and resolves the target, refusing it (a
// reason, and the offending address if any) unless every address it
// resolves to may be dialed. err is a resolution failure.
func (p *Proxy) check(ctx context.Context, t Target) (addrs []netip.Addr, reason string, bad netip.Addr, err error) {
	if !p.allow.Allows(t) {
		if t.Name == "" {
			return nil, "IP address " + t.Addr.String() + " is not on its network allowlist; only listed addresses may be used", netip.Addr{}, nil
		}
		return nil, t.String() + " is not on its network allowlist", netip.Addr{}, nil
	}
	if t.Name == "" {
		addrs = []netip.Addr{t.Addr}
	} else {
		ctx, cancel := context.WithTimeout(ctx, p.cfg.ConnectTimeout)
		defer cancel()
		addrs, err = p.cfg.Resolver.LookupNetIP(ctx, "ip", t.Name)
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			return nil, "", netip.Addr{}, fmt.Errorf("resolving %s: %w", t.Name, err)
		}
	}
	for i, a := range addrs {
		a = a.Unmap()
		addrs[i] = a
		if class := p.forbidden(a); class != "" {
			if t.Name == "" {
				return nil, a.String() + " is a " + class + " address", a, nil
			}
			return nil, t.Name + " resolves to " + a.String() + ", a " + class + " address", a, nil
		}
	}
	return addrs, "", netip.Addr{}, nil
}

// dial connects to the first of the checked addresses that answers, within
// the connect timeout, each address getting a share of the time left (as
// net.Dialer does), so one that never answers does not starve the others.
func (p *Proxy) dial(ctx context.Context, t Target, addrs []netip.Addr) (net.Conn, netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ConnectTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var errs []error
	for i, a := range addrs {
		share := time.Until(deadline) / time.Duration(len(addrs)-i)
		actx, acancel := context.WithTimeout(ctx, max(share, min(2*time.Second, time.Until(deadline))))
		c, err := p.cfg.Dial(actx, "tcp", netip.AddrPortFrom(a, t.Port).String())
		acancel()
		if err == nil {
			return c, a, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.Addr{}, fmt.Errorf("connecting to %s: %w", t, errors.Join(errs...))
}

// answer ends a request the proxy answers itself. For CONNECT the message
// is also the status line's reason phrase, which is what most clients
// (Go, Python, curl -v) report of a failed tunnel.
func (p *Proxy) answer(w http.ResponseWriter, connect bool, status int, msg string) {
	msg = oneLine(msg)
	if !connect {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, msg+"\n")
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.log.Warn("egress: hijacking a refused CONNECT", "err", err)
		return
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 %03d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", status, msg, len(msg)+1, msg)
}

// tunnel answers 200 and relays bytes both ways until both sides have
// ended, one fails, the connection idles past the limit or Serve ends.
func (p *Proxy) tunnel(ctx context.Context, w http.ResponseWriter, c *limitedConn, up net.Conn, rec *Record) {
	defer up.Close()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		rec.Error = fmt.Sprintf("hijacking the connection: %v", err)
		return
	}
	defer conn.Close()
	rec.Status = http.StatusOK
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		rec.Error = fmt.Sprintf("answering the client: %v", err)
		return
	}
	cu := &countedConn{Conn: up}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := cu.Write(b); err != nil {
			rec.Up, rec.Error = cu.up.Load(), fmt.Sprintf("writing to %s: %v", rec.Addr, err)
			return
		}
	}
	idle := p.relay(ctx, c, cu)
	rec.Up, rec.Down = cu.up.Load(), cu.down.Load()
	if idle {
		rec.Error = fmt.Sprintf("idle for %s", p.cfg.IdleTimeout)
	}
}

// relay copies both ways between the client and the counted upstream
// (see pipe) and says whether idleness ended it.
func (p *Proxy) relay(ctx context.Context, client net.Conn, up *countedConn) (idle bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := watch(p.cfg.IdleTimeout, cancel)
	up.w = w
	pipe(ctx, client, up)
	w.stop()
	return w.fired.Load()
}

// forward sends one plain HTTP request to the upstream, in origin form
// with the checked authority as its Host, and relays the response.
func (p *Proxy) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, c *limitedConn, up net.Conn, t Target, rec *Record) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cu := &countedConn{Conn: up}
	defer func() { rec.Up, rec.Down = cu.up.Load(), cu.down.Load() }()
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	idle := watch(p.cfg.IdleTimeout, func() { cancel(); c.Close() })
	defer idle.stop()
	cu.w = idle
	fail := func(format string, args ...any) {
		rec.Error = fmt.Sprintf(format, args...)
		if idle.fired.Load() {
			rec.Error = fmt.Sprintf("idle for %s", p.cfg.IdleTimeout)
		}
		if rec.Status == 0 {
			rec.Status = http.StatusBadGateway
			p.answer(w, false, rec.Status, rec.Error)
		}
	}

	out := r.Clone(ctx)
	out.RequestURI = ""
	out.Host = t.String()
	if t.Port == 80 {
		out.Host = t.Host()
		if t.Name == "" && t.Addr.Is6() {
			out.Host = "[" + t.Host() + "]"
		}
	}
	out.Close = true
	removeHopHeaders(out.Header)
	if err := out.Write(cu); err != nil {
		fail("sending the request to %s: %v", t, err)
		return
	}
	limit := &io.LimitedReader{R: cu, N: int64(p.cfg.MaxHeaderBytes) + 4096}
	br := bufio.NewReader(limit)
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(br, out)
		if err != nil {
			fail("reading the response of %s (malformed, or a header over %d bytes): %v", t, p.cfg.MaxHeaderBytes, err)
			return
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		_ = resp.Body.Close() // an interim 1xx: the server already answered the client's Expect
	}
	defer resp.Body.Close()
	limit.N = 1 << 62
	if resp.StatusCode == http.StatusSwitchingProtocols {
		fail("%s switched protocols; upgrades go through CONNECT", t)
		return
	}
	removeHopHeaders(resp.Header)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	rec.Status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	buf := getBuf()
	defer putBuf(buf)
	// Flushed as it comes: a stream (or a stalled upstream) reaches the
	// command as far as it got.
	if _, err := io.CopyBuffer(flushWriter{w}, resp.Body, *buf); err != nil {
		fail("relaying the response of %s: %v", t, err)
	}
}

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

// hop-by-hop headers, never forwarded (RFC 9110 7.6.1), with the proxy's
// own.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// display is a host as a message may show it: as named when it is plain,
// quoted otherwise (never a line break in a status line).
func display(host string) string {
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_:[]*%", c) >= 0) || i >= 255 {
			return strconv.QuoteToASCII(clip.String(host, 100))
		}
	}
	return host
}

// oneLine makes msg safe for a status line: printable ASCII only.
func oneLine(msg string) string {
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 || msg[i] >= 0x7f {
			q := strconv.QuoteToASCII(msg)
			return q[1 : len(q)-1]
		}
	}
	return msg
}
