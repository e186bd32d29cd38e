package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Revoke stops a session at once on an administrator's word: the
// stop is a command like any other (its sandbox is destroyed when the turn
// in flight is cut, its log records who revoked it and is sealed).
func (s Sessions) Revoke(ctx context.Context, p identity.Principal, id string) error {
	if _, err := s.Sessions().For(ctx, p, id, identity.Manage); err != nil {
		return err
	}
	payload, _ := json.Marshal(session.StopPayload{Reason: "revoked by " + p.User})
	_, err := s.send(ctx, id, wire.SendRequest{Kind: session.KindStop, Payload: payload, IdempotencyKey: revokeKey + id},
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
func (s Sessions) RevokeUser(ctx context.Context, p identity.Principal, name string) ([]string, []string, error) {
	if err := s.Access.RevokeUser(ctx, p, name); err != nil {
		return nil, nil, err
	}
	// Archived sessions too: archiving does not end a session.
	live, err := sessionsIn(ctx, s.Store, true, session.StatusQueued, session.StatusRunning, session.StatusAwaiting)
	if err != nil {
		return nil, nil, err
	}
	var stopped, problems []string
	for _, x := range live {
		if r := x.CreatedBy.Requester(); r.Kind != session.SenderOperator || r.ID != name {
			continue
		}
		if err := s.Sessions().Revoke(ctx, p, x.ID); err != nil {
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
	by = by.Requester()
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
	role, ok, err := s.Access.Role(ctx, identity.Principal{User: u.Name, Admin: u.Admin}, project)
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
func (s Gates) ApproveStart(ctx context.Context, caller identity.Principal, id string, approve bool, note string) (session.Park, error) {
	if _, err := s.Sessions().For(ctx, caller, id, identity.Approve); err != nil {
		return session.Park{}, err
	}
	by := caller.Sender()
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
	if x.CreatedBy.Requester().Same(by) {
		return p, fmt.Errorf("%w: %s requested session %s and cannot approve its start", errdefs.ErrDenied, by.ID, id)
	}
	if approve {
		var sp spec.Agent
		_ = json.Unmarshal(x.AgentSpec, &sp)
		if next := identityGate(id, sp, x.CreatedBy.Requester()); next != nil {
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

// SetCredentials gives a session waiting for them the credentials its
// agent declares: the requester's own, so only the requester may give
// them. They are kept encrypted, never written to the transcript or to
// workflow history, put in its commands' environment, taken out of their
// output, and deleted when the session ends.
func (s Gates) SetCredentials(ctx context.Context, caller identity.Principal, id string, values map[string]string) (session.Park, error) {
	x, err := s.requestedBy(ctx, caller, id, "session %s acts with the credentials of %s, who requested it; only they may give them")
	if err != nil {
		return session.Park{}, err
	}
	by := caller.Sender()
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
		sealed[name] = s.ContentKey.Encrypt([]byte(v), durable.CredentialAD(id, name))
	}
	if len(values) != len(sealed) {
		return p, fmt.Errorf("%w: agent %s takes the credentials %s, no others", errdefs.ErrInvalid, sp.Name, strings.Join(sp.Environment.Credentials, ", "))
	}
	if err := s.Store.SetCredentials(ctx, id, sealed); err != nil {
		return p, err
	}
	return s.resolve(ctx, p, session.ParkGranted, by, "credentials given")
}

// projectCredentialAD binds a sealed service credential to its project.
func projectCredentialAD(project, name string) []byte {
	return []byte("paddock-project-credential-v1\n" + project + "\n" + name)
}

// SetProjectCredentials keeps a project's service credentials (its admins
// only): what agents acting as the project's service identity give their
// commands. Values are sealed, never shown again; names are logged.
func (s Gates) SetProjectCredentials(ctx context.Context, p identity.Principal, project string, values map[string]string) error {
	if err := s.Access.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
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
	return s.Access.Record(ctx, p, "service_credentials_set", map[string]string{"project": project, "names": strings.Join(slices.Sorted(maps.Keys(values)), ",")})
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
		sealed[name] = s.ContentKey.Encrypt(plain, durable.CredentialAD(x.ID, name))
	}
	return s.Store.SetCredentials(ctx, x.ID, sealed)
}

// ChooseIdentity answers a session waiting for its identity choice (its
// requester only): as the project's service identity it starts with the
// project's credentials; as the requester it waits for theirs.
func (s Gates) ChooseIdentity(ctx context.Context, caller identity.Principal, id, as string) (session.Park, error) {
	x, err := s.requestedBy(ctx, caller, id, "session %s's identity is chosen by %s, who requested it")
	if err != nil {
		return session.Park{}, err
	}
	by := caller.Sender()
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
		return s.Store.PassPark(ctx, p.ID, &by, "acting as "+by.ID, *credentialsPark(id, sp, x.CreatedBy.Requester()))
	}
	return p, fmt.Errorf("%w: identity %q: want requester or service", errdefs.ErrInvalid, as)
}

// requestedBy is session id when caller, who may read it, is its
// requester; anyone else is refused, why saying so (its verbs: the
// session, its requester).
func (s *Service) requestedBy(ctx context.Context, caller identity.Principal, id, why string) (session.Session, error) {
	x, err := s.Sessions().For(ctx, caller, id, identity.Read)
	if err != nil {
		return x, err
	}
	if r := x.CreatedBy.Requester(); !r.Same(caller.Sender()) {
		return session.Session{}, fmt.Errorf("%w: "+why, errdefs.ErrDenied, id, r)
	}
	return x, nil
}
