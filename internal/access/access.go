// Package access is who may do what on a Paddock server: users, their
// tokens (and web logins, and logins through the organization's
// directory), projects and the role each member holds in them. Every use
// case of the core asks it (Allow, Readable) before it acts; everything
// it changes is written to the access log first.
package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/throttle"
)

// Store is the part of the store access uses: users, tokens, projects
// and their members, the access log, and the forge links a person's
// access goes with.
type Store interface {
	store.Identity
	store.Audit
	store.Agents
	ForgetForgeLinks(ctx context.Context, project, user string) error
}

// Service authenticates callers and keeps users, tokens, projects and
// members.
type Service struct {
	Store Store
	// Guesses counts failed authentications per source address, so
	// guessing tokens is slowed down (nil: not counted).
	Guesses *throttle.Failures
	// Logger reports what callers do not see (failed authentications);
	// discarded when nil.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// OIDC verifies logins through the organization's directory (nil: not
	// configured).
	OIDC *OIDC
}

// MaxTokenLifetime bounds a token's expiry; DefaultTokenLifetime is a
// login's.
const (
	MaxTokenLifetime     = 366 * 24 * time.Hour
	DefaultTokenLifetime = 30 * 24 * time.Hour
	// WebSessionLifetime bounds a web login; it ends sooner with the
	// token it was opened with.
	WebSessionLifetime = 12 * time.Hour
	// WebSessionLabel labels the tokens web logins hold.
	WebSessionLabel = "web session"
)

// Authenticate checks an API token and returns who holds it. Every failure
// is the same 401 to the caller; the reason is for the server's log.
func (s *Service) Authenticate(ctx context.Context, token string) (identity.Principal, error) {
	id, secret, err := identity.ParseToken(token)
	if err != nil {
		return identity.Principal{}, fmt.Errorf("%w: %v", errdefs.ErrUnauthenticated, err)
	}
	t, err := s.Store.GetToken(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) || (err == nil && !identity.Matches(secret, t.Hash)) {
		return identity.Principal{}, fmt.Errorf("%w: unknown token", errdefs.ErrUnauthenticated)
	}
	if err != nil {
		return identity.Principal{}, err
	}
	if err := t.Usable(s.now()); err != nil {
		return identity.Principal{}, fmt.Errorf("%w: %v", errdefs.ErrUnauthenticated, err)
	}
	u, err := s.Store.GetUser(ctx, t.User)
	if err != nil {
		return identity.Principal{}, err
	}
	if u.RevokedAt != nil {
		return identity.Principal{}, fmt.Errorf("%w: user %s was revoked", errdefs.ErrUnauthenticated, u.Name)
	}
	if t.LastUsed == nil || s.now().Sub(*t.LastUsed) >= time.Minute {
		// Last use is kept to the minute: most calls write nothing.
		_ = s.Store.TouchToken(ctx, t.ID)
	}
	return identity.Principal{User: u.Name, Admin: u.Admin, Via: "token:" + t.ID}, nil
}

// AuthenticateFrom is Authenticate for a caller at source (its address):
// a source that failed too often is refused before its token is checked
// (errdefs.ThrottledError), and failures are logged at most once a minute per
// source.
func (s *Service) AuthenticateFrom(ctx context.Context, source, token string) (identity.Principal, error) {
	if s.Guesses != nil {
		if ok, wait := s.Guesses.Allowed(source); !ok {
			return identity.Principal{}, &errdefs.ThrottledError{Wait: wait}
		}
	}
	p, err := s.Authenticate(ctx, token)
	if err != nil && errors.Is(err, errdefs.ErrUnauthenticated) && s.Guesses != nil {
		if report, unreported := s.Guesses.Fail(source); report && s.Logger != nil {
			s.Logger.Info("authentication refused", "err", err, "source", source, "unreported failures from it", unreported)
		}
	}
	return p, err
}

// Principal is user as a caller authenticated elsewhere (via says how:
// "kubernetes:…"): ErrDenied when Paddock has no such user or revoked it.
func (s *Service) Principal(ctx context.Context, user, via string) (identity.Principal, error) {
	u, err := s.Store.GetUser(ctx, user)
	if errors.Is(err, errdefs.ErrNotFound) {
		return identity.Principal{}, fmt.Errorf("%w: %s is not a Paddock user (an administrator adds them: paddock users create %s)", errdefs.ErrDenied, user, user)
	}
	if err != nil {
		return identity.Principal{}, err
	}
	if u.RevokedAt != nil {
		return identity.Principal{}, fmt.Errorf("%w: user %s was revoked", errdefs.ErrDenied, u.Name)
	}
	return identity.Principal{User: u.Name, Admin: u.Admin, Via: via}, nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Role is p's role in project: a server administrator is every project's
// admin; false when p has none.
func (s *Service) Role(ctx context.Context, p identity.Principal, project string) (identity.Role, bool, error) {
	if project == "" {
		// Never the store's "any project": a role is a role somewhere.
		return "", false, nil
	}
	if p.Admin {
		return identity.Admin, true, nil
	}
	ms, err := s.Store.Members(ctx, project, p.User)
	if err != nil || len(ms) == 0 {
		return "", false, err
	}
	return ms[0].Role, true, nil
}

// Allow checks that p may do a in project. Without any role there the
// project's things do not exist for p (hidden: what names a 404); with a
// role that does not allow a, it is a 403 naming the role.
func (s *Service) Allow(ctx context.Context, p identity.Principal, project string, a identity.Action, hidden string) error {
	role, ok, err := s.Role(ctx, p, project)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", hidden, errdefs.ErrNotFound)
	}
	if !role.Can(a) {
		return fmt.Errorf("%w: %s is %s in project %s, which does not allow %s", errdefs.ErrDenied, p.User, role, project, a)
	}
	return nil
}

// Readable is what a list may show p: the projects where p may do a
// (scoped), or every project for a server administrator (not scoped).
func (s *Service) Readable(ctx context.Context, p identity.Principal, a identity.Action) (within []string, scoped bool, err error) {
	if p.Admin {
		return nil, false, nil
	}
	ms, err := s.Store.Members(ctx, "", p.User)
	if err != nil {
		return nil, false, err
	}
	for _, m := range ms {
		if m.Role.Can(a) {
			within = append(within, m.Project)
		}
	}
	return within, true, nil
}

// MustAdmin refuses anyone but a server administrator what ("creating
// users").
func MustAdmin(p identity.Principal, what string) error {
	if !p.Admin {
		return fmt.Errorf("%w: %s needs a server administrator; %s is not one", errdefs.ErrDenied, what, p.User)
	}
	return nil
}

// CreateUser adds a user (server administrators only).
func (s *Service) CreateUser(ctx context.Context, p identity.Principal, name string, admin bool) (identity.User, error) {
	if err := MustAdmin(p, "creating users"); err != nil {
		return identity.User{}, err
	}
	if err := identity.CheckName(identity.UserName, name); err != nil {
		return identity.User{}, err
	}
	u, err := s.Store.CreateUser(ctx, identity.User{Name: name, Admin: admin})
	if err != nil {
		return u, err
	}
	return u, s.Record(ctx, p, "user_created", map[string]string{"user": name, "admin": fmt.Sprint(admin)})
}

// Users lists users (server administrators only).
func (s *Service) Users(ctx context.Context, p identity.Principal) ([]identity.User, error) {
	if err := MustAdmin(p, "listing users"); err != nil {
		return nil, err
	}
	return s.Store.ListUsers(ctx)
}

// NewToken mints a token for user (the user themself, or a server
// administrator for anyone): its full text is returned once and never
// stored. ttl 0 is DefaultTokenLifetime.
func (s *Service) NewToken(ctx context.Context, p identity.Principal, user, label string, ttl time.Duration) (identity.Token, string, error) {
	if user != p.User {
		if err := MustAdmin(p, "a token for another user"); err != nil {
			return identity.Token{}, "", err
		}
	}
	if ttl == 0 {
		ttl = DefaultTokenLifetime
	}
	if ttl < time.Minute || ttl > MaxTokenLifetime {
		return identity.Token{}, "", fmt.Errorf("%w: token lifetime %s: want 1m up to %s", errdefs.ErrInvalid, ttl, MaxTokenLifetime)
	}
	if err := session.Limit("label", label, 100); err != nil {
		return identity.Token{}, "", fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	u, err := s.Store.GetUser(ctx, user)
	if err != nil {
		return identity.Token{}, "", err
	}
	if u.RevokedAt != nil {
		return identity.Token{}, "", fmt.Errorf("%w: user %s is revoked", errdefs.ErrConflict, user)
	}
	// A token minted with one's own token is its child: it ends no later,
	// and is revoked with it, so a short-lived or revoked credential leaves
	// nothing longer-lived behind.
	parent := ""
	if id, ok := strings.CutPrefix(p.Via, "token:"); ok && user == p.User {
		pt, err := s.Store.GetToken(ctx, id)
		if err != nil {
			return identity.Token{}, "", err
		}
		parent = pt.ID
		if pt.ExpiresAt != nil && s.now().Add(ttl).After(*pt.ExpiresAt) {
			ttl = pt.ExpiresAt.Sub(s.now())
		}
	}
	t, full, err := s.mint(ctx, user, label, ttl, parent)
	if err != nil {
		return t, "", err
	}
	return t, full, s.Record(ctx, p, "token_created", map[string]string{"token": t.ID, "user": user, "parent": parent,
		"expires": t.ExpiresAt.UTC().Format(time.RFC3339)})
}

func (s *Service) mint(ctx context.Context, user, label string, ttl time.Duration, parent string) (identity.Token, string, error) {
	id, full, hash := identity.NewToken()
	exp := s.now().Add(ttl)
	t, err := s.Store.CreateToken(ctx, identity.Token{ID: id, User: user, Label: label, Hash: hash, ExpiresAt: &exp, Parent: parent})
	return t, full, err
}

// OpenWebSession opens a web login with token: a token of its own (the
// login cookie never holds the token typed in), a child of it, ending
// after WebSessionLifetime or with it, whichever comes first, revoked with
// it and at logout.
func (s *Service) OpenWebSession(ctx context.Context, source, token string) (identity.Token, string, error) {
	p, err := s.AuthenticateFrom(ctx, source, token)
	if err != nil {
		return identity.Token{}, "", err
	}
	return s.NewToken(ctx, p, p.User, WebSessionLabel, WebSessionLifetime)
}

// CloseWebSession revokes the web login token holds (a logout); a token
// that is not a web login's is left alone.
func (s *Service) CloseWebSession(ctx context.Context, token string) error {
	p, err := s.Authenticate(ctx, token)
	if err != nil {
		return nil // already unusable
	}
	id, _ := strings.CutPrefix(p.Via, "token:")
	t, err := s.Store.GetToken(ctx, id)
	if err != nil || t.Label != WebSessionLabel {
		return err
	}
	if err := s.Store.RevokeToken(ctx, id); err != nil {
		return err
	}
	return s.Record(ctx, p, "logout", map[string]string{"token": id})
}

// Tokens lists user's tokens (theirs, or anyone's for an administrator;
// "" is everyone's, administrators only).
func (s *Service) Tokens(ctx context.Context, p identity.Principal, user string) ([]identity.Token, error) {
	if user != p.User {
		if err := MustAdmin(p, "another user's tokens"); err != nil {
			return nil, err
		}
	}
	return s.Store.ListTokens(ctx, user)
}

// RevokeToken revokes a token of p's own, or any for an administrator; it
// stops working on the next call.
func (s *Service) RevokeToken(ctx context.Context, p identity.Principal, id string) error {
	t, err := s.Store.GetToken(ctx, id)
	if err != nil {
		return err
	}
	if t.User != p.User && !p.Admin {
		return fmt.Errorf("token %q: %w", id, errdefs.ErrNotFound)
	}
	if err := s.Store.RevokeToken(ctx, id); err != nil {
		return err
	}
	return s.Record(ctx, p, "token_revoked", map[string]string{"token": id, "user": t.User})
}

// CreateProject adds a project (server administrators only).
func (s *Service) CreateProject(ctx context.Context, p identity.Principal, name string) error {
	if err := MustAdmin(p, "creating projects"); err != nil {
		return err
	}
	if err := identity.CheckName(identity.ProjectName, name); err != nil {
		return err
	}
	if err := s.Store.CreateProject(ctx, name); err != nil {
		return err
	}
	return s.Record(ctx, p, "project_created", map[string]string{"project": name})
}

// Projects lists the projects p has a role in (every one for an admin).
func (s *Service) Projects(ctx context.Context, p identity.Principal) ([]identity.Membership, error) {
	if !p.Admin {
		return s.Store.Members(ctx, "", p.User)
	}
	names, err := s.Store.ListProjects(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]identity.Membership, len(names))
	for i, n := range names {
		out[i] = identity.Membership{Project: n, User: p.User, Role: identity.Admin}
	}
	return out, nil
}

// SetMember gives user a role in project (the project's admins and server
// administrators).
func (s *Service) SetMember(ctx context.Context, p identity.Principal, m identity.Membership) error {
	if err := s.Allow(ctx, p, m.Project, identity.Manage, "project "+m.Project); err != nil {
		return err
	}
	if !m.Role.Valid() {
		_, err := identity.ParseRole(string(m.Role))
		return fmt.Errorf("%w: %v", errdefs.ErrInvalid, err)
	}
	if err := identity.CheckName(identity.UserName, m.User); err != nil {
		return err
	}
	// A server administrator, who lists users anyway, is told of a typo;
	// anyone else gets the same answer whether the user exists or not (a
	// role for a name not taken yet is an invitation), so managing a
	// project tells nothing of the server's other users.
	if p.Admin {
		if _, err := s.Store.GetUser(ctx, m.User); err != nil {
			return err
		}
	}
	if err := s.Store.SetMember(ctx, m); err != nil {
		return err
	}
	return s.Record(ctx, p, "member_set", map[string]string{"project": m.Project, "user": m.User, "role": string(m.Role)})
}

// RemoveMember takes user's role in project away.
func (s *Service) RemoveMember(ctx context.Context, p identity.Principal, project, user string) error {
	if err := s.Allow(ctx, p, project, identity.Manage, "project "+project); err != nil {
		return err
	}
	if err := s.Store.RemoveMember(ctx, project, user); err != nil {
		return err
	}
	// Their own forge credentials there go with their access.
	if err := s.Store.ForgetForgeLinks(ctx, project, user); err != nil {
		return err
	}
	return s.Record(ctx, p, "member_removed", map[string]string{"project": project, "user": user})
}

// Members lists a project's members (anyone who may read it).
func (s *Service) Members(ctx context.Context, p identity.Principal, project string) ([]identity.Membership, error) {
	if err := s.Allow(ctx, p, project, identity.Read, "project "+project); err != nil {
		return nil, err
	}
	return s.Store.Members(ctx, project, "")
}

// CheckApprover says whether user may be named a session's approver in
// project: a real member whose role may approve.
func (s *Service) CheckApprover(ctx context.Context, project, user string) error {
	// One answer for every refusal: it tells nobody who exists.
	refused := fmt.Errorf("%w: approver %q may not approve in project %s (name a member or admin of the project)", errdefs.ErrInvalid, user, project)
	u, err := s.Store.GetUser(ctx, user)
	if err != nil || u.RevokedAt != nil {
		return refused
	}
	role, ok, err := s.Role(ctx, identity.Principal{User: u.Name, Admin: u.Admin}, project)
	if err != nil {
		return err
	}
	if !ok || !role.Can(identity.Approve) {
		return refused
	}
	return nil
}

// Bootstrap makes sure the server has an administrator: on first start it
// creates one named admin (server administrator, admin of the default
// project), and whenever DATA_DIR/admin.token is missing it writes a new
// token of the first administrator there (mode 0600), for local use.
func (s *Service) Bootstrap(ctx context.Context, dataDir, admin string) (created bool, err error) {
	if err := identity.CheckName(identity.UserName, admin); err != nil {
		return false, fmt.Errorf("first administrator: %w (set PADDOCK_ADMIN_USER)", err)
	}
	users, err := s.Store.ListUsers(ctx)
	if err != nil {
		return false, err
	}
	first := ""
	for _, u := range users {
		if u.Admin && u.RevokedAt == nil {
			first = u.Name
			break
		}
	}
	if len(users) == 0 {
		if _, err := s.Store.CreateUser(ctx, identity.User{Name: admin, Admin: true}); err != nil {
			return false, err
		}
		if err := s.Store.EnsureProject(ctx, spec.DefaultProject); err != nil {
			return false, err
		}
		if err := s.Store.SetMember(ctx, identity.Membership{Project: spec.DefaultProject, User: admin, Role: identity.Admin}); err != nil {
			return false, err
		}
		first, created = admin, true
		if err := s.Record(ctx, identity.Principal{}, "user_created", map[string]string{"user": admin, "admin": "true", "first": "true"}); err != nil {
			return created, err
		}
	}
	path := filepath.Join(dataDir, datadir.AdminToken)
	if _, err := os.Stat(path); err == nil || first == "" {
		return created, nil
	}
	t, full, err := s.mint(ctx, first, "admin.token", MaxTokenLifetime, "")
	if err != nil {
		return created, err
	}
	if err := s.Record(ctx, identity.Principal{}, "token_created", map[string]string{"token": t.ID, "user": first, "file": datadir.AdminToken}); err != nil {
		return created, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return created, fmt.Errorf("admin token: %w", err)
	}
	if _, err := f.WriteString(full + "\n"); err != nil {
		f.Close()
		return created, fmt.Errorf("admin token: %w", err)
	}
	return created, f.Close()
}

// Record appends to the access log what by did (kind, with its
// metadata: names and IDs, never secrets), before the act is reported.
func (s *Service) Record(ctx context.Context, by identity.Principal, kind string, meta map[string]string) error {
	if by.Via != "" {
		meta["authenticatedBy"] = by.Via
	}
	who := "operator:" + by.User
	if by.User == "" {
		who = "system:paddock"
	}
	if _, err := s.Store.AppendAccess(ctx, audit.Entry{Time: s.now().UTC(), Identity: who, Kind: kind, Meta: meta}); err != nil {
		return fmt.Errorf("%s done, but the access log could not record it: %w", kind, err)
	}
	return nil
}

// AccessLog is the access log (server administrators).
func (s *Service) AccessLog(ctx context.Context, p identity.Principal) ([]audit.Entry, error) {
	if err := MustAdmin(p, "the access log"); err != nil {
		return nil, err
	}
	return s.Store.AuditLog(ctx, audit.AccessLog)
}

// RevokeUser revokes a user (server administrators only): their tokens
// stop working on the next call. (The core stops their sessions.)
func (s *Service) RevokeUser(ctx context.Context, p identity.Principal, name string) error {
	if err := MustAdmin(p, "revoking users"); err != nil {
		return err
	}
	if name == p.User {
		return fmt.Errorf("%w: you cannot revoke yourself", errdefs.ErrInvalid)
	}
	if err := s.Store.RevokeUser(ctx, name); err != nil {
		return err
	}
	if err := s.Store.ForgetForgeLinks(ctx, "", name); err != nil {
		return err
	}
	return s.Record(ctx, p, "user_revoked", map[string]string{"user": name})
}
