package access

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
)

// TestAllowAndTokens: the answers every use case relies on, on a real
// SQLite store: no role is "not found" (a project one cannot see does not
// exist for them), a role without the action is "denied" naming it, an
// administrator may do anything; a token works until revoked, and a
// revoked user's token stops working.
func TestAllowAndTokens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "paddock.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &Service{Store: st}
	if _, err := s.Bootstrap(ctx, dir, "root"); err != nil {
		t.Fatal(err)
	}
	root := identity.Principal{User: "root", Admin: true}
	if err := s.CreateProject(ctx, root, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, root, "vic", false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMember(ctx, root, identity.Membership{Project: "team", User: "vic", Role: identity.Viewer}); err != nil {
		t.Fatal(err)
	}
	vic := identity.Principal{User: "vic"}
	for _, c := range []struct {
		p       identity.Principal
		project string
		a       identity.Action
		want    error
	}{
		{vic, "team", identity.Read, nil},
		{vic, "team", identity.Steer, errdefs.ErrDenied},
		{vic, "default", identity.Read, errdefs.ErrNotFound},
		{root, "team", identity.Manage, nil},
		{vic, "", identity.Read, errdefs.ErrNotFound},
	} {
		err := s.Allow(ctx, c.p, c.project, c.a, "project "+c.project)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Allow(%s, %q, %s) = %v, want %v", c.p.User, c.project, c.a, err, c.want)
		}
	}

	_, token, err := s.NewToken(ctx, root, "vic", "laptop", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Authenticate(ctx, token); err != nil || p.User != "vic" {
		t.Fatalf("Authenticate: %v %v", p, err)
	}
	if err := s.RevokeUser(ctx, root, "vic"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !errors.Is(err, errdefs.ErrUnauthenticated) {
		t.Fatalf("a revoked user's token: %v, want unauthenticated", err)
	}
	if err := s.RevokeUser(ctx, root, "root"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("revoking oneself: %v", err)
	}
	// The first administrator's token was written for local use.
	data, err := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	if err != nil || !strings.HasPrefix(string(data), "pdk_") {
		t.Fatalf("admin token file: %q %v", data, err)
	}
	log, err := s.AccessLog(ctx, root)
	if err != nil || len(log) < 5 {
		t.Fatalf("access log: %d entries, %v", len(log), err)
	}
}
