package egress

import "net/netip"

// Address classes a destination may not be in, whatever the allowlist says.
const (
	ClassLoopback    = "loopback"
	ClassPrivate     = "private"
	ClassLinkLocal   = "link-local"
	ClassShared      = "shared (CGNAT)"
	ClassUnspecified = "unspecified"
	ClassMulticast   = "multicast"
	ClassMetadata    = "cloud metadata"
	ClassReserved    = "reserved"
	// Documentation and benchmarking ranges route nowhere real: a
	// destination there is a lab or a trick. This node's own addresses
	// reach its services past loopback. All three may be permitted
	// explicitly (Config.Permit).
	ClassDocumentation = "documentation"
	ClassBenchmarking  = "benchmarking"
	ClassNode          = "this node's own"
)

// documentation and benchmarking are the ranges of those classes.
var (
	documentation = []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
		netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
		netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("3fff::/20"),
	}
	benchmarking = []netip.Prefix{
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("2001:2::/48"),
	}
)

// metadata are the cloud instance-metadata endpoints: AWS, GCP, Azure,
// OpenStack (169.254.169.254), AWS over IPv6, Alibaba, Oracle.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"),
}

var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated)
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
}

var (
	shared = netip.MustParsePrefix("100.64.0.0/10")
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Forbidden says which refused class a destination address is in, or ""
// when it may be dialed. IPv4-mapped addresses are judged as IPv4, and
// the IPv4 address embedded in a NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
// address is judged too, so a private address cannot be reached through
// a translator.
func Forbidden(a netip.Addr) string {
	a = a.Unmap()
	for _, m := range metadata {
		if a == m {
			return ClassMetadata
		}
	}
	switch {
	case !a.IsValid(), a.IsUnspecified():
		return ClassUnspecified
	case a.IsLoopback():
		return ClassLoopback
	case a.IsPrivate():
		return ClassPrivate
	case a.IsLinkLocalUnicast():
		return ClassLinkLocal
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return ClassMulticast
	case shared.Contains(a):
		return ClassShared
	}
	for _, class := range []struct {
		name     string
		prefixes []netip.Prefix
	}{{ClassReserved, reserved}, {ClassDocumentation, documentation}, {ClassBenchmarking, benchmarking}} {
		for _, p := range class.prefixes {
			if p.Contains(a) {
				return class.name
			}
		}
	}
	if v4, ok := embedded(a); ok {
		if c := Forbidden(v4); c != "" {
			return c + " (embedded in " + a.String() + ")"
		}
	}
	return ""
}

// embedded is the IPv4 address a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address reaches.
func embedded(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	var v4 [4]byte
	switch {
	case nat64.Contains(a):
		copy(v4[:], b[12:16])
	case sixTo4.Contains(a):
		copy(v4[:], b[2:6])
	default:
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(v4), true
}
