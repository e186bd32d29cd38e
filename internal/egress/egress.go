// Package egress is the one way a sandboxed command reaches the network.
// A bubblewrap sandbox has no network interface; Paddock serves a Proxy on
// the host side of a Unix socket bound into it, and Forward, running
// inside the sandbox, relays each connection made to the sandbox's
// loopback to that socket. A sandbox pod reaches the same socket through
// its node's Gateway (see gateway.go), which its network policy alone
// allows. The proxy speaks HTTP CONNECT (HTTPS and any TCP) and plain HTTP
// forward-proxy requests (absolute-form URLs). It allows only the
// HOST:PORT pairs on its allowlist, resolves names itself, refuses IP
// literals that are not listed as such and every destination address that
// is loopback, private, link-local, shared (CGNAT), unspecified, multicast,
// reserved or a cloud metadata endpoint, and dials exactly the address it
// checked: a name is never resolved a second time, so DNS rebinding cannot
// move a connection after the check. A refused request is answered 403
// with "network to HOST is not allowed by this agent's environment" and
// the reason, in the body and, for CONNECT, as the status line's reason
// phrase (what Go, Python and curl report of a failed tunnel), so the
// command, and the model reading its output, sees why. Every connection, allowed or
// refused, is reported through Config.Record when it ends, with its bytes
// and duration. Connections, headers, connecting and idleness are bounded.
package egress

import (
	"net/netip"
	"time"
)

// Record is one connection (a CONNECT tunnel, or one plain HTTP request),
// allowed or refused, reported when it ends.
type Record struct {
	Start    time.Time
	Duration time.Duration
	// Method is CONNECT, or the method of a plain HTTP request.
	Method string
	// Host and Port are the destination the command named (the host
	// normalized: lower case, no trailing dot); Host is empty when the
	// request named none.
	Host string
	Port int
	// Addr is the address dialed or, for a refusal because of the address
	// a name resolved to, that address. Zero when no address was involved.
	Addr netip.Addr
	// Allowed says the allowlist and the address checks let the
	// connection through; Reason says why not when they did not.
	Allowed bool
	Reason  string
	// Error is what failed after the connection was allowed: resolution,
	// connection, an idle timeout, a malformed upstream response.
	Error string
	// Status is the status the command received: the proxy's own (200 for
	// an established tunnel, 403, 502, 503) or, for plain HTTP, the
	// upstream's.
	Status int
	// Up and Down are the bytes sent to and received from the destination:
	// the tunnel's payload, or for plain HTTP the request and response as
	// written on the upstream connection.
	Up, Down int64
}
