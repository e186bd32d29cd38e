package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// AdminTokenFile is where the first administrator's token is written on
// first start (mode 0600), for `paddock` commands on the same machine.
const AdminTokenFile = "admin.token"

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

// Readable lists the projects p may read (nil for a server admin: all).
func (s *Service) Readable(ctx context.Context, p identity.Principal, a identity.Action) ([]string, bool, error) {
	if p.Admin {
		return nil, true, nil
	}
	ms, err := s.Store.Members(ctx, "", p.User)
	if err != nil {
		return nil, false, err
	}
	var out []string
	for _, m := range ms {
		if m.Role.Can(a) {
			out = append(out, m.Project)
		}
	}
	return out, false, nil
}

func mustAdmin(p identity.Principal, what string) error {
	if !p.Admin {
		return fmt.Errorf("%w: %s needs a server administrator; %s is not one", errdefs.ErrDenied, what, p.User)
	}
	return nil
}

// CreateUser adds a user (server administrators only).
func (s *Service) CreateUser(ctx context.Context, p identity.Principal, name string, admin bool) (identity.User, error) {
	if err := mustAdmin(p, "creating users"); err != nil {
		return identity.User{}, err
	}
	if err := identity.ValidUser(name); err != nil {
		return identity.User{}, fmt.Errorf("%w: %v", errdefs.ErrInvalid, err)
	}
	u, err := s.Store.CreateUser(ctx, identity.User{Name: name, Admin: admin})
	if err != nil {
		return u, err
	}
	return u, s.recordAccess(ctx, p, "user_created", map[string]string{"user": name, "admin": fmt.Sprint(admin)})
}

// Users lists users (server administrators only).
func (s *Service) Users(ctx context.Context, p identity.Principal) ([]identity.User, error) {
	if err := mustAdmin(p, "listing users"); err != nil {
		return nil, err
	}
	return s.Store.ListUsers(ctx)
}

// NewToken mints a token for user (the user themself, or a server
// administrator for anyone): its full text is returned once and never
// stored. ttl 0 is DefaultTokenLifetime.
func (s *Service) NewToken(ctx context.Context, p identity.Principal, user, label string, ttl time.Duration) (identity.Token, string, error) {
	if user != p.User {
		if err := mustAdmin(p, "a token for another user"); err != nil {
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
	return t, full, s.recordAccess(ctx, p, "token_created", map[string]string{"token": t.ID, "user": user, "parent": parent,
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
	return s.recordAccess(ctx, p, "logout", map[string]string{"token": id})
}

// Tokens lists user's tokens (theirs, or anyone's for an administrator;
// "" is everyone's, administrators only).
func (s *Service) Tokens(ctx context.Context, p identity.Principal, user string) ([]identity.Token, error) {
	if user != p.User {
		if err := mustAdmin(p, "another user's tokens"); err != nil {
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
	return s.recordAccess(ctx, p, "token_revoked", map[string]string{"token": id, "user": t.User})
}

// CreateProject adds a project (server administrators only).
func (s *Service) CreateProject(ctx context.Context, p identity.Principal, name string) error {
	if err := mustAdmin(p, "creating projects"); err != nil {
		return err
	}
	if err := ValidProject(name); err != nil {
		return err
	}
	if err := s.Store.CreateProject(ctx, name); err != nil {
		return err
	}
	return s.recordAccess(ctx, p, "project_created", map[string]string{"project": name})
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
	if err := identity.ValidUser(m.User); err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
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
	return s.recordAccess(ctx, p, "member_set", map[string]string{"project": m.Project, "user": m.User, "role": string(m.Role)})
}

// RemoveMember takes user's role in project away.
func (s *Service) RemoveMember(ctx context.Context, p identity.Principal, project, user string) error {
	if err := s.Allow(ctx, p, project, identity.Manage, "project "+project); err != nil {
		return err
	}
	if err := s.Store.RemoveMember(ctx, project, user); err != nil {
		return err
	}
	return s.recordAccess(ctx, p, "member_removed", map[string]string{"project": project, "user": user})
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
	if err := identity.ValidUser(admin); err != nil {
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
		if err := s.recordAccess(ctx, identity.Principal{}, "user_created", map[string]string{"user": admin, "admin": "true", "first": "true"}); err != nil {
			return created, err
		}
	}
	path := filepath.Join(dataDir, AdminTokenFile)
	if _, err := os.Stat(path); err == nil || first == "" {
		return created, nil
	}
	t, full, err := s.mint(ctx, first, "admin.token", MaxTokenLifetime, "")
	if err != nil {
		return created, err
	}
	if err := s.recordAccess(ctx, identity.Principal{}, "token_created", map[string]string{"token": t.ID, "user": first, "file": AdminTokenFile}); err != nil {
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

// RevokeSession stops a session at once on an administrator's word: the
// stop is a command like any other (its sandbox is destroyed when the turn
// in flight is cut, its log records who revoked it and is sealed).
func (s *Service) RevokeSession(ctx context.Context, p identity.Principal, id string) error {
	payload, _ := json.Marshal(session.StopPayload{Reason: "revoked by " + p.User})
	_, err := s.send(ctx, id, SendRequest{Kind: session.KindStop, Payload: payload, IdempotencyKey: revokeKey + id},
		p.Sender())
	if _, terminal := errors.AsType[*errdefs.TerminalError](err); terminal {
		return nil // already ended
	}
	return err
}

// revokeKey starts the idempotency key of a revocation's stop: reserved,
// so no caller can take it first and make the revocation a no-op.
const revokeKey = "revoke/"

// RevokeUser revokes a user (server administrators only): their tokens
// stop working on the next call, and every live session they requested is
// stopped. It returns the sessions stopped and what could not be.
func (s *Service) RevokeUser(ctx context.Context, p identity.Principal, name string) ([]string, []string, error) {
	if err := mustAdmin(p, "revoking users"); err != nil {
		return nil, nil, err
	}
	if name == p.User {
		return nil, nil, fmt.Errorf("%w: you cannot revoke yourself", errdefs.ErrInvalid)
	}
	if err := s.Store.RevokeUser(ctx, name); err != nil {
		return nil, nil, err
	}
	if err := s.recordAccess(ctx, p, "user_revoked", map[string]string{"user": name}); err != nil {
		return nil, nil, err
	}
	// Archived sessions too: archiving does not end a session.
	live, err := sessionsIn(ctx, s.Store, true, session.StatusQueued, session.StatusRunning, session.StatusAwaiting)
	if err != nil {
		return nil, nil, err
	}
	var stopped, problems []string
	for _, x := range live {
		if x.CreatedBy.Kind != session.SenderOperator || x.CreatedBy.ID != name {
			continue
		}
		if err := s.RevokeSession(ctx, p, x.ID); err != nil {
			problems = append(problems, x.ID+": "+err.Error())
			continue
		}
		stopped = append(stopped, x.ID)
	}
	return stopped, problems, nil
}

// startGate is the park a session waits in before it starts: a guest's
// sessions need a member's approval to start; an agent whose commands act
// with the requester's credentials waits for them (nil: it starts at once).
func (s *Service) startGate(ctx context.Context, id, project string, by session.Sender, sp spec.Agent) (*session.Park, error) {
	guest, err := s.isGuest(ctx, project, by)
	if err != nil {
		return nil, err
	}
	if guest {
		return gatePark(id, bound.AwaitingStartApproval, "requested by "+by.ID+", a guest in project "+project), nil
	}
	return identityGate(id, sp, by), nil
}

// identityGate is the gate after any start approval: the identity choice
// (ask), or the requester's credentials (requester); nil for an agent
// without credentials or acting as the project's service identity.
func identityGate(id string, sp spec.Agent, by session.Sender) *session.Park {
	if len(sp.Environment.Credentials) == 0 {
		return nil
	}
	switch sp.Identity {
	case spec.IdentityAsk:
		return gatePark(id, bound.AwaitingIdentity, "agent "+sp.Name+" acts as its requester or as project "+sp.Project+"'s service identity: "+by.ID+" chooses")
	case spec.IdentityService:
		return nil
	}
	return credentialsPark(id, sp, by)
}

func gatePark(id string, r bound.Reason, detail string) *session.Park {
	return &session.Park{ID: uuid.NewString(), SessionID: id, Reason: string(r), Needs: bound.Needs(r, id), Detail: detail}
}

func credentialsPark(id string, sp spec.Agent, by session.Sender) *session.Park {
	return gatePark(id, bound.AwaitingCredentials, "agent "+sp.Name+" acts with the requester's credentials ("+
		strings.Join(sp.Environment.Credentials, ", ")+"): "+by.ID+" gives them")
}

func (s *Service) isGuest(ctx context.Context, project string, by session.Sender) (bool, error) {
	if by.Kind != session.SenderOperator {
		return false, nil
	}
	u, err := s.Store.GetUser(ctx, by.ID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return false, nil // not a user: an embedding's caller, not gated here
	}
	if err != nil {
		return false, err
	}
	role, ok, err := s.Role(ctx, identity.Principal{User: u.Name, Admin: u.Admin}, project)
	return ok && role == identity.Guest, err
}

// awaitingStart says whether session id waits at the door (for a start
// approval or credentials): its start command held, no workflow yet.
func (s *Service) awaitingStart(ctx context.Context, id string) (bool, error) {
	open, err := s.Store.ListParks(ctx, id, true)
	if err != nil {
		return false, err
	}
	for _, p := range open {
		if p.RecoveryCommand == id+"-start" {
			return true, nil
		}
	}
	return false, nil
}

// ApproveStart decides a guest's session waiting at the door: approved,
// its start command is released and its workflow starts; rejected, it
// stops without having run anything, its log sealed. Who decides is
// recorded; the requester cannot decide their own.
func (s *Service) ApproveStart(ctx context.Context, id string, approve bool, note string, by session.Sender) (session.Park, error) {
	if err := checkNote("note", note); err != nil {
		return session.Park{}, err
	}
	p, err := s.openPark(ctx, id, bound.AwaitingStartApproval)
	if err != nil {
		return p, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return p, err
	}
	if x.CreatedBy.ID == by.ID && x.CreatedBy.Kind == by.Kind {
		return p, fmt.Errorf("%w: %s requested session %s and cannot approve its start", errdefs.ErrDenied, by.ID, id)
	}
	if approve {
		var sp spec.Agent
		_ = json.Unmarshal(x.AgentSpec, &sp)
		if next := identityGate(id, sp, x.CreatedBy); next != nil {
			return s.Store.PassPark(ctx, p.ID, &by, note, *next)
		}
		if sp.Identity == spec.IdentityService {
			if err := s.adoptServiceCredentials(ctx, x, sp); err != nil {
				return p, err
			}
		}
		return s.resolve(ctx, p, session.ParkGranted, by, note)
	}
	if p, err = s.Store.ResolvePark(ctx, p.ID, session.ParkCanceled, &by, note); err != nil {
		return p, err
	}
	if err := s.Store.StopSession(ctx, id, session.StopPayload{Reason: "start rejected by " + by.ID}); err != nil {
		return p, err
	}
	if s.Sealer != nil {
		return p, s.Sealer.Seal(ctx, id)
	}
	return p, nil
}

// MaxCredential bounds one credential's value.
const MaxCredential = 16 << 10

// credentialAD binds a sealed credential to its session and name.
func credentialAD(sessionID, name string) []byte {
	return []byte("paddock-credential-v1\n" + sessionID + "\n" + name)
}

// SetCredentials gives a session waiting for them the credentials its
// agent declares: the requester's own, so only the requester may give
// them. They are kept encrypted, never written to the transcript or to
// workflow history, put in its commands' environment, taken out of their
// output, and deleted when the session ends.
func (s *Service) SetCredentials(ctx context.Context, id string, values map[string]string, by session.Sender) (session.Park, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return session.Park{}, err
	}
	if x.CreatedBy.Kind != by.Kind || x.CreatedBy.ID != by.ID {
		return session.Park{}, fmt.Errorf("%w: session %s acts with the credentials of %s, who requested it; only they may give them", errdefs.ErrDenied, id, x.CreatedBy)
	}
	p, err := s.openPark(ctx, id, bound.AwaitingCredentials)
	if err != nil {
		return p, err
	}
	var sp spec.Agent
	_ = json.Unmarshal(x.AgentSpec, &sp)
	sealed := map[string][]byte{}
	for _, name := range sp.Environment.Credentials {
		v, ok := values[name]
		switch {
		case !ok || v == "":
			return p, fmt.Errorf("%w: credential %s is missing (agent %s needs %s)", errdefs.ErrInvalid, name, sp.Name, strings.Join(sp.Environment.Credentials, ", "))
		case len(v) > MaxCredential || strings.ContainsRune(v, 0):
			return p, fmt.Errorf("%w: credential %s: at most %d bytes, no NUL", errdefs.ErrInvalid, name, MaxCredential)
		}
		sealed[name] = s.ContentKey.Encrypt([]byte(v), credentialAD(id, name))
	}
	if len(values) != len(sealed) {
		return p, fmt.Errorf("%w: agent %s takes the credentials %s, no others", errdefs.ErrInvalid, sp.Name, strings.Join(sp.Environment.Credentials, ", "))
	}
	if err := s.Store.SetCredentials(ctx, id, sealed); err != nil {
		return p, err
	}
	return s.resolve(ctx, p, session.ParkGranted, by, "credentials given")
}

// recordAccess appends to the access log what by did (kind, with its
// metadata: names and IDs, never secrets), before the act is reported.
func (s *Service) recordAccess(ctx context.Context, by identity.Principal, kind string, meta map[string]string) error {
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
	if err := mustAdmin(p, "the access log"); err != nil {
		return nil, err
	}
	return s.Store.AuditLog(ctx, audit.AccessLog)
}

// projectCredentialAD binds a sealed service credential to its project.
func projectCredentialAD(project, name string) []byte {
	return []byte("paddock-project-credential-v1\n" + project + "\n" + name)
}

// SetProjectCredentials keeps a project's service credentials (its admins
// only): what agents acting as the project's service identity give their
// commands. Values are sealed, never shown again; names are logged.
func (s *Service) SetProjectCredentials(ctx context.Context, p identity.Principal, project string, values map[string]string) error {
	if err := s.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return err
	}
	if len(values) == 0 {
		return fmt.Errorf("%w: no credentials given", errdefs.ErrInvalid)
	}
	sealed := map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		v := values[name]
		if !credentialName.MatchString(name) || v == "" || len(v) > MaxCredential || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: credential %q: want a variable name and a value of 1 to %d bytes without NUL", errdefs.ErrInvalid, name, MaxCredential)
		}
		sealed[name] = s.ContentKey.Encrypt([]byte(v), projectCredentialAD(project, name))
	}
	if err := s.Store.SetProjectCredentials(ctx, project, sealed); err != nil {
		return err
	}
	return s.recordAccess(ctx, p, "service_credentials_set", map[string]string{"project": project, "names": strings.Join(slices.Sorted(maps.Keys(values)), ",")})
}

var credentialName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// adoptServiceCredentials gives session x the project's service
// credentials its agent declares (sealed again under the session's own
// binding), or says which one the project lacks.
func (s *Service) adoptServiceCredentials(ctx context.Context, x session.Session, sp spec.Agent) error {
	have, err := s.Store.ProjectCredentials(ctx, x.Project)
	if err != nil {
		return err
	}
	sealed := map[string][]byte{}
	for _, name := range sp.Environment.Credentials {
		v, ok := have[name]
		if !ok {
			return fmt.Errorf("%w: project %s has no service credential %s for agent %s: an admin of the project sets it with `paddock projects credentials %s %s`",
				errdefs.ErrConflict, x.Project, name, sp.Name, x.Project, name)
		}
		plain, err := s.ContentKey.Decrypt(v, projectCredentialAD(x.Project, name))
		if err != nil {
			return fmt.Errorf("service credential %s of project %s cannot be opened: %w", name, x.Project, err)
		}
		sealed[name] = s.ContentKey.Encrypt(plain, credentialAD(x.ID, name))
	}
	return s.Store.SetCredentials(ctx, x.ID, sealed)
}

// ChooseIdentity answers a session waiting for its identity choice (its
// requester only): as the project's service identity it starts with the
// project's credentials; as the requester it waits for theirs.
func (s *Service) ChooseIdentity(ctx context.Context, id, as string, by session.Sender) (session.Park, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return session.Park{}, err
	}
	if x.CreatedBy.Kind != by.Kind || x.CreatedBy.ID != by.ID {
		return session.Park{}, fmt.Errorf("%w: session %s's identity is chosen by %s, who requested it", errdefs.ErrDenied, id, x.CreatedBy)
	}
	p, err := s.openPark(ctx, id, bound.AwaitingIdentity)
	if err != nil {
		return p, err
	}
	var sp spec.Agent
	_ = json.Unmarshal(x.AgentSpec, &sp)
	switch as {
	case spec.IdentityService:
		if err := s.adoptServiceCredentials(ctx, x, sp); err != nil {
			return p, err
		}
		return s.resolve(ctx, p, session.ParkGranted, by, "acting as project "+x.Project+"'s service identity")
	case spec.IdentityRequester:
		return s.Store.PassPark(ctx, p.ID, &by, "acting as "+by.ID, *credentialsPark(id, sp, x.CreatedBy))
	}
	return p, fmt.Errorf("%w: identity %q: want requester or service", errdefs.ErrInvalid, as)
}
