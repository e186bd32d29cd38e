package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseAllowlist(t *testing.T) {
	for _, tc := range []struct {
		entry string
		ok    bool
	}{
		{"proxy.golang.org:443", true},
		{"Proxy.Golang.ORG.:443", true},
		{"*.example.com:443", true},
		{"1.2.3.4:80", true},
		{"[2001:db8::1]:443", true},
		{"registry_1.example:8080", true},
		{"example.com", false},           // no port
		{"example.com:", false},          // empty port
		{"example.com:0", false},         // port 0
		{"example.com:65536", false},     // port too big
		{"example.com:+80", false},       // sign
		{"example.com:http", false},      // named port
		{"*.com:443", false},             // a whole TLD
		{"*:443", false},                 // everything
		{"foo.*.com:443", false},         // wildcard inside
		{"exa mple.com:443", false},      // space
		{"-bad.com:443", false},          // label starts with '-'
		{"a..b:443", false},              // empty label
		{"127.1:80", false},              // numeric form of an address
		{"2130706433:80", false},         // numeric form of an address
		{"[fe80::1%eth0]:80", false},     // zone
		{"bücher.example:443", false},    // not punycode
		{"example.com:443:1", false},     // two ports
		{"::1:443", false},               // unbracketed IPv6
		{"", false},                      // empty
		{"[::1]", false},                 // no port
		{"http://example.com:80", false}, // a URL
	} {
		_, err := ParseAllowlist([]string{tc.entry})
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok %v", tc.entry, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("%q: %v is not ErrInvalidEntry", tc.entry, err)
		}
	}
}

func TestParseAllowlistIsAllOrNothing(t *testing.T) {
	a, err := ParseAllowlist([]string{"ok.example:443", "bad", "also bad:1"})
	if err == nil || a.Len() != 0 {
		t.Fatalf("got %d rules, err %v; want none and an error", a.Len(), err)
	}
	for _, want := range []string{`entry 1 "bad"`, `entry 2 "also bad:1"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) <= len(s) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

func TestAllows(t *testing.T) {
	a, err := ParseAllowlist([]string{"proxy.golang.org:443", "*.npmjs.org:443", "198.51.100.7:8080", "[2001:db8::1]:443", "plain.example:80"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		authority string
		def       uint16
		want      bool
	}{
		{"proxy.golang.org:443", 0, true},
		{"PROXY.golang.org.:443", 0, true},
		{"proxy.golang.org:80", 0, false},    // port not listed
		{"sum.golang.org:443", 0, false},     // sibling
		{"xproxy.golang.org:443", 0, false},  // suffix without a dot
		{"registry.npmjs.org:443", 0, true},  // wildcard
		{"a.b.npmjs.org:443", 0, true},       // deeper
		{"npmjs.org:443", 0, false},          // the wildcard's own name
		{"evilnpmjs.org:443", 0, false},      // suffix without a dot
		{"npmjs.org.evil.com:443", 0, false}, // prefix
		{"198.51.100.7:8080", 0, true},       // listed literal
		{"198.51.100.7:443", 0, false},       // literal, other port
		{"198.51.100.8:8080", 0, false},      // unlisted literal
		{"[::ffff:198.51.100.7]:8080", 0, true},
		{"[2001:db8:0::1]:443", 0, true}, // another spelling
		{"plain.example", 80, true},      // default port
		{"plain.example:", 80, true},     // empty port: the default
		{"plain.example:81", 80, false},
		{"[2001:db8::1]", 443, true},
	} {
		tg, err := ParseTarget(tc.authority, tc.def)
		if err != nil {
			t.Errorf("%q: %v", tc.authority, err)
			continue
		}
		if got := a.Allows(tg); got != tc.want {
			t.Errorf("%q (%+v): allowed %v, want %v", tc.authority, tg, got, tc.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		authority string
		def       uint16
		want      Target
		ok        bool
	}{
		{"example.com:443", 0, Target{Name: "example.com", Port: 443}, true},
		{"example.com", 0, Target{}, false},
		{"example.com", 80, Target{Name: "example.com", Port: 80}, true},
		{"[::1]:80", 0, Target{Addr: netip.MustParseAddr("::1"), Port: 80}, true},
		{"[::ffff:127.0.0.1]:80", 0, Target{Addr: netip.MustParseAddr("127.0.0.1"), Port: 80}, true},
		{"0x7f.1:80", 0, Target{}, false},
		{"127.000.000.001:80", 0, Target{}, false},
		{"exa\r\nmple:80", 0, Target{}, false},
		{"user@example.com:80", 0, Target{}, false},
		{"example.com:99999", 0, Target{}, false},
		{":443", 0, Target{}, false},
	} {
		got, err := ParseTarget(tc.authority, tc.def)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v ok %v", tc.authority, got, err, tc.want, tc.ok)
		}
	}
}

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		addr, class string
	}{
		{"93.184.215.14", ""},
		{"198.51.100.7", ClassDocumentation},
		{"192.0.2.1", ClassDocumentation},
		{"203.0.113.200", ClassDocumentation},
		{"2001:db8::1", ClassDocumentation},
		{"3fff::1", ClassDocumentation},
		{"::ffff:203.0.113.9", ClassDocumentation},
		{"198.19.255.1", ClassBenchmarking},
		{"2001:2::9", ClassBenchmarking},
		{"2606:4700::1111", ""},
		{"127.0.0.1", ClassLoopback},
		{"127.255.0.9", ClassLoopback},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassLoopback},
		{"10.1.2.3", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"172.32.0.1", ""},
		{"192.168.1.1", ClassPrivate},
		{"fd12:3456::1", ClassPrivate},
		{"fc00::1", ClassPrivate},
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"169.254.169.254", ClassMetadata},
		{"::ffff:169.254.169.254", ClassMetadata},
		{"fd00:ec2::254", ClassMetadata},
		{"100.100.100.200", ClassMetadata},
		{"100.64.0.1", ClassShared},
		{"100.127.255.254", ClassShared},
		{"100.128.0.1", ""},
		{"0.0.0.0", ClassUnspecified},
		{"::", ClassUnspecified},
		{"0.1.2.3", ClassReserved},
		{"224.0.0.1", ClassMulticast},
		{"239.1.1.1", ClassMulticast},
		{"ff02::1", ClassMulticast},
		{"255.255.255.255", ClassReserved},
		{"240.0.0.1", ClassReserved},
		{"198.18.0.1", ClassBenchmarking},
		{"192.0.0.8", ClassReserved},
		{"::127.0.0.1", ClassReserved},
		{"fec0::1", ClassReserved},
		{"64:ff9b::a00:1", ClassPrivate + " (embedded in 64:ff9b::a00:1)"},        // NAT64 of 10.0.0.1
		{"64:ff9b::7f00:1", ClassLoopback + " (embedded in 64:ff9b::7f00:1)"},     // NAT64 of 127.0.0.1
		{"64:ff9b::5db8:d70e", ""},                                                // NAT64 of a public address
		{"2002:a9fe:a9fe::1", ClassMetadata + " (embedded in 2002:a9fe:a9fe::1)"}, // 6to4 of 169.254.169.254
		{"2002:5db8:d70e::1", ""},                                                 // 6to4 of a public address
		{"64:ff9b:1::1", ClassReserved},
	} {
		if got := Forbidden(netip.MustParseAddr(tc.addr)); got != tc.class {
			t.Errorf("%s: %q, want %q", tc.addr, got, tc.class)
		}
	}
	if got := Forbidden(netip.Addr{}); got != ClassUnspecified {
		t.Errorf("zero address: %q", got)
	}
}

func TestDisplayAndOneLine(t *testing.T) {
	if got := display("example.com"); got != "example.com" {
		t.Errorf("display plain: %q", got)
	}
	if got := display("a\r\nb"); got != `"a\r\nb"` {
		t.Errorf("display quoted: %q", got)
	}
	if got := oneLine("x\r\ny é"); got != `x\r\ny \u00e9` {
		t.Errorf("oneLine: %q", got)
	}
}
