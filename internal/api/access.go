package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// guard is who may call a route: every route declares one, and the
// router checks it before the handler runs.
type guard struct {
	kind   accessKind
	action identity.Action
	param  string // the path value naming the project, for onProject
}

type accessKind int

const (
	kindPublic       accessKind = iota // no credential (health, login, signed trigger deliveries)
	kindCaller                         // any authenticated caller; the handler scopes what it returns
	kindAdmin                          // server administrators
	kindSession                        // the {id} session's project, for action
	kindApproval                       // the {id} approval's session's project, for action
	kindProject                        // the project named by a path value, for action
	kindProjectQuery                   // the project in ?project= (default: "default"), for action
)

var (
	public = guard{kind: kindPublic}
	caller = guard{kind: kindCaller}
	admin  = guard{kind: kindAdmin}
)

func onSession(a identity.Action) guard  { return guard{kind: kindSession, action: a} }
func onApproval(a identity.Action) guard { return guard{kind: kindApproval, action: a} }
func onProject(param string, a identity.Action) guard {
	return guard{kind: kindProject, action: a, param: param}
}
func onProjectQuery(a identity.Action) guard { return guard{kind: kindProjectQuery, action: a} }

type principalKey struct{}

// TokenCookie is the web app's login cookie: the API token, HttpOnly and
// SameSite=Strict.
const TokenCookie = "paddock_token"

// Source is where a request comes from, as failed authentications are
// counted: the connection's peer (a header saying otherwise is the
// caller's word), its /64 for IPv6 (one host holds a whole /64).
func Source(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		return host
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.WithZone("").Prefix(64)
		return p.String()
	}
	return a.String()
}

// caller is who is calling (set by authorize; empty on public routes).
func principal(r *http.Request) identity.Principal {
	p, _ := r.Context().Value(principalKey{}).(identity.Principal)
	return p
}

// sender is the caller as the sender of what they do.
func sender(r *http.Request) session.Sender {
	return principal(r).Sender()
}

// authorize authenticates r (Authorization: Bearer TOKEN) and checks acc,
// returning the request carrying its principal. Things of a project the
// caller has no role in are not found, never forbidden: their existence is
// not given away.
func (s *Server) authorize(r *http.Request, acc guard) (*http.Request, error) {
	if acc.kind == kindPublic {
		return r, nil
	}
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if c, err := r.Cookie(TokenCookie); !ok && err == nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// The web app's pages read the API (the transcript's SSE stream)
		// with their login cookie; changes go through the web app's forms,
		// which check a CSRF token, never through the API with a cookie.
		token, ok = c.Value, true
	}
	if !ok {
		return r, fmt.Errorf("%w: no credential: send Authorization: Bearer TOKEN (`paddock login`, or `paddock tokens create`)", errdefs.ErrUnauthenticated)
	}
	p, err := s.Service.Access.AuthenticateFrom(r.Context(), Source(r), token)
	var throttled *errdefs.ThrottledError
	if errors.As(err, &throttled) {
		return r, err
	}
	if err != nil {
		return r, fmt.Errorf("%w: the token is not valid (unknown, expired or revoked): log in again with `paddock login` or ask for a new token", errdefs.ErrUnauthenticated)
	}
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	ctx := r.Context()
	switch acc.kind {
	case kindAdmin:
		if !p.Admin {
			return r, fmt.Errorf("%w: %s %s needs a server administrator", errdefs.ErrDenied, r.Method, r.URL.Path)
		}
	case kindSession:
		_, err := s.Service.Sessions().For(ctx, p, r.PathValue("id"), acc.action)
		return r, err
	case kindApproval:
		_, _, err := s.Service.Gates().ApprovalFor(ctx, p, r.PathValue("id"), acc.action)
		return r, err
	case kindProject:
		project := r.PathValue(acc.param)
		return r, s.Service.Access.Allow(ctx, p, project, acc.action, fmt.Sprintf("project %q", project))
	case kindProjectQuery:
		project := r.URL.Query().Get("project")
		if project == "" {
			project = spec.DefaultProject
		}
		return r, s.Service.Access.Allow(ctx, p, project, acc.action, fmt.Sprintf("project %q", project))
	}
	return r, nil
}

// recheckEvery is how often a long-lived response (an SSE stream, a
// followed export) checks its caller again.
const recheckEvery = 2 * time.Second

// still checks a long-lived response's caller again, as authorize did at
// its start: the token still valid (not revoked, not expired), its user
// not revoked, the role still granting acc. It returns the request with
// the caller as they are now.
func (s *Server) still(r *http.Request, acc guard) (*http.Request, bool) {
	r2, err := s.authorize(r, acc)
	return r2, err == nil
}

// readProject checks a project named in a query: one the caller has no
// role in is not found, worded as one that does not exist would be (the
// role is checked before existence, so neither answer tells them apart).
func (s *Server) readProject(r *http.Request, project string) error {
	if err := s.Service.Access.Allow(r.Context(), principal(r), project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return err
	}
	return s.Service.Projects().Check(r.Context(), project)
}
