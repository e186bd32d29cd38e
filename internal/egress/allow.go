package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/internal/clip"
)

// ErrInvalidEntry marks an allowlist entry that is not HOST:PORT.
var ErrInvalidEntry = errors.New("invalid allowlist entry")

// Allowlist is a parsed list of HOST:PORT entries. HOST is an exact DNS
// name, a wildcard *.NAME matching every name below NAME (not NAME itself),
// or an IP literal (IPv6 in brackets); PORT is required.
type Allowlist struct{ rules []rule }

type rule struct {
	name     string     // lower case, no trailing dot; for a wildcard, the suffix after "*."
	wildcard bool       // name matches its subdomains only
	addr     netip.Addr // an IP literal entry (name empty)
	port     uint16
}

// ParseAllowlist parses every entry, all or nothing: the error names each
// entry refused.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var (
		a    Allowlist
		errs []error
	)
	for i, e := range entries {
		r, err := parseEntry(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d %q: %w", i, e, err))
			continue
		}
		a.rules = append(a.rules, r)
	}
	if len(errs) > 0 {
		return Allowlist{}, errors.Join(errs...)
	}
	return a, nil
}

func parseEntry(s string) (rule, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return rule{}, fmt.Errorf("%w: must be HOST:PORT (%v)", ErrInvalidEntry, err)
	}
	port, err := parsePort(p)
	if err != nil {
		return rule{}, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		name, err := normalizeName(rest)
		if err != nil {
			return rule{}, fmt.Errorf("%w: wildcard: %w", ErrInvalidEntry, err)
		}
		if !strings.Contains(name, ".") {
			return rule{}, fmt.Errorf("%w: wildcard *.%s covers a whole top-level domain", ErrInvalidEntry, name)
		}
		return rule{name: name, wildcard: true, port: port}, nil
	}
	name, addr, err := normalizeHost(host)
	if err != nil {
		return rule{}, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	return rule{name: name, addr: addr, port: port}, nil
}

// Allows says whether the normalized target (a name, or an IP literal with
// an empty name) is on the list.
func (a Allowlist) Allows(t Target) bool {
	for _, r := range a.rules {
		if r.port != t.Port {
			continue
		}
		switch {
		case t.Name == "":
			if r.name == "" && r.addr == t.Addr {
				return true
			}
		case r.wildcard:
			if strings.HasSuffix(t.Name, "."+r.name) {
				return true
			}
		case r.name == t.Name:
			return true
		}
	}
	return false
}

// Len is the number of entries.
func (a Allowlist) Len() int { return len(a.rules) }

// Target is a destination a command named: a DNS name (lower case, no
// trailing dot) or, when Name is empty, an IP literal; and a port.
type Target struct {
	Name string
	Addr netip.Addr
	Port uint16
}

// Host is the target's host as it is displayed: the name, or the address.
func (t Target) Host() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Addr.String()
}

// String is HOST:PORT (IPv6 literals in brackets).
func (t Target) String() string {
	return net.JoinHostPort(t.Host(), strconv.Itoa(int(t.Port)))
}

// ParseTarget parses an authority (HOST:PORT, or HOST alone when
// defaultPort is not zero) as a proxy request names it.
func ParseTarget(authority string, defaultPort uint16) (Target, error) {
	host, p, err := net.SplitHostPort(authority)
	switch {
	case err == nil && p == "" && defaultPort != 0:
	case err == nil:
		if defaultPort, err = parsePort(p); err != nil {
			return Target{}, err
		}
	case defaultPort == 0:
		return Target{}, fmt.Errorf("target must be HOST:PORT: %w", err)
	case strings.HasPrefix(authority, "[") && strings.HasSuffix(authority, "]"):
		host = authority[1 : len(authority)-1]
	default:
		host = authority
	}
	name, addr, err := normalizeHost(host)
	if err != nil {
		return Target{}, err
	}
	return Target{Name: name, Addr: addr, Port: defaultPort}, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || len(s) > 5 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// normalizeHost returns a name (lower case, without its trailing dot) or,
// for an IP literal, the address with an empty name.
func normalizeHost(host string) (string, netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("address %s has a zone", addr)
		}
		return "", addr.Unmap(), nil
	}
	name, err := normalizeName(host)
	return name, netip.Addr{}, err
}

// normalizeName checks a DNS name: ASCII letters, digits, '-' and '_'
// in labels of 1 to 63 bytes, at most 253 bytes, and a last label that is
// not all digits (so no numeric form of an address passes for a name).
func normalizeName(s string) (string, error) {
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if name == "" || len(name) > 253 {
		return "", fmt.Errorf("host name %q is empty or too long", clip.String(s, 100))
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("host name %q has an invalid label", clip.String(s, 100))
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("host name %q has a character outside letters, digits, '-' and '_'", clip.String(s, 100))
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Errorf("host name %q is numeric but not an IP address", clip.String(s, 100))
	}
	return name, nil
}
