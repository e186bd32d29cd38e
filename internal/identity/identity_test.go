package identity

import (
	"strings"
	"testing"
	"time"
)

func TestRoles(t *testing.T) {
	cases := []struct {
		role Role
		can  []Action
		not  []Action
	}{
		{Admin, []Action{Read, Start, Steer, Approve, Audit, Manage}, nil},
		{Member, []Action{Read, Start, Steer, Approve}, []Action{Audit, Manage}},
		{Auditor, []Action{Read, Audit}, []Action{Start, Steer, Approve, Manage}},
		{Viewer, []Action{Read}, []Action{Start, Steer, Approve, Audit, Manage}},
		{Guest, []Action{Read, Start}, []Action{Steer, Approve, Audit, Manage}},
		{"owner", nil, []Action{Read}},
	}
	for _, c := range cases {
		for _, a := range c.can {
			if !c.role.Can(a) {
				t.Errorf("%s cannot %s", c.role, a)
			}
		}
		for _, a := range c.not {
			if c.role.Can(a) {
				t.Errorf("%s can %s", c.role, a)
			}
		}
	}
	for _, bad := range []string{"Admin", " admin", "", "owner"} {
		if _, err := ParseRole(bad); err == nil {
			t.Errorf("role %q accepted", bad)
		}
	}
}

func TestTokens(t *testing.T) {
	id, full, hash := NewToken()
	gotID, secret, err := ParseToken(full)
	if err != nil || gotID != id || !Matches(secret, hash) {
		t.Fatalf("round trip: %q %q %v", gotID, secret, err)
	}
	if Matches(secret+"x", hash) || strings.Contains(hash, secret) {
		t.Error("the hash gives the secret away or matches another")
	}
	for _, bad := range []string{"", "pdk_", "pdk_short", strings.TrimPrefix(full, "pdk_"), full + "x", "bearer " + full} {
		if _, _, err := ParseToken(bad); err == nil {
			t.Errorf("token %q parsed", bad)
		}
	}
	past := time.Now().Add(-time.Second)
	if (Token{ExpiresAt: &past}).Usable(time.Now()) == nil || (Token{RevokedAt: &past}).Usable(time.Now()) == nil {
		t.Error("an expired or revoked token is usable")
	}
}

func TestUserFromClaim(t *testing.T) {
	for claim, want := range map[string]string{"Ana@Example.com": "ana-example.com", "test-user@127.0.0.1": "test-user-127.0.0.1", "  bob  ": "bob"} {
		if got, err := UserFromClaim(claim); err != nil || got != want {
			t.Errorf("UserFromClaim(%q) = %q, %v; want %q", claim, got, err, want)
		}
	}
	if _, err := UserFromClaim("@@@"); err == nil {
		t.Error("a claim with no name in it accepted")
	}
}
