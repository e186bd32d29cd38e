// Package remote is the core's part of sessions on remote repositories:
// a project's connections (added, listed, revoked by its admins), a
// remote repository checked as a session is created on it, the
// deliverable pushed to its forge as a pull request, and the bindings
// to pull requests, released by the forge's closing deliveries.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/pulls"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Service is the remote repositories' use cases.
type Service struct {
	Store  store.Store
	Access *access.Service
	// Key seals and opens the connections' credentials.
	Key interface {
		Encrypt(plain, ad []byte) []byte
		Decrypt(sealed, ad []byte) ([]byte, error)
	}
	// Mirrors fetch and push (nil: none is fetched, and sessions on
	// remote repositories are refused); Pulls open pull requests.
	Mirrors Mirrors
	Pulls   PullRequests
	// FetchErr says why there are no Mirrors, where it is known.
	FetchErr error
	// Bounded bounds host-side git on a session's copy (copies.Set.Bounded).
	Bounded func(context.Context) context.Context
}

// Mirrors fetch the remote repositories sessions work on (package
// mirror).
type Mirrors interface {
	Resolve(ctx context.Context, src mirror.Source, ref string) (commit string, took time.Duration, err error)
	Mirror(ctx context.Context, src mirror.Source, ref, commit string) (string, error)
	Deliver(ctx context.Context, src mirror.Source, commit, branch string, write func(dir string) error) error
	IsBranch(ctx context.Context, src mirror.Source, name string) bool
	Collect(keep func(project, connection string) bool) ([]mirror.Collected, error)
	Unused(keep func(project, connection, path string) bool, before time.Time) ([]mirror.Collected, error)
}

// MirrorIdle is how long a mirror no live session names is kept after it
// was last used.
const MirrorIdle = 7 * 24 * time.Hour

// CollectMirrors removes the mirrors of connections revoked or gone
// (nothing fetches into them again), and those no live session names
// that nothing used for MirrorIdle, or, past the mirrors' bound, used
// least recently (a later session fetches again).
func (s *Service) CollectMirrors(ctx context.Context, now time.Time) ([]wire.Collected, error) {
	var out []wire.Collected
	if s.Mirrors == nil {
		return out, nil
	}
	live, used := map[string]bool{}, map[string]bool{}
	projects, err := s.Store.ListProjects(ctx)
	if err != nil {
		return out, err
	}
	for _, p := range projects {
		conns, err := s.Store.ListConnections(ctx, p)
		if err != nil {
			return out, err
		}
		for _, c := range conns {
			live[p+"/"+c.Name] = c.Live()
		}
	}
	sessions, err := store.AllSessions(ctx, s.Store, session.Filter{IncludeArchived: true,
		Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}})
	if err != nil {
		return out, err
	}
	for _, x := range sessions {
		if x.Remote != nil {
			used[x.Project+"/"+x.Remote.Connection+"/"+x.Remote.Path] = true
		}
	}
	gone, err := s.Mirrors.Collect(func(project, connection string) bool { return live[project+"/"+connection] })
	for _, m := range gone {
		out = append(out, wire.Collected{Mirror: m.Project + "/" + m.Connection + "/" + m.Path, Reason: "its connection " + m.Connection + " is revoked", Bytes: m.Bytes})
	}
	if err != nil {
		return out, err
	}
	idle, err := s.Mirrors.Unused(func(project, connection, path string) bool { return used[project+"/"+connection+"/"+path] }, now.Add(-MirrorIdle))
	for _, m := range idle {
		why := "no live session uses it, and it was not used for 7 days"
		if m.Crowded {
			why = "no live session uses it, and the mirrors held more than PADDOCK_MIRRORS_MAX_BYTES: it was the least recently used"
		}
		out = append(out, wire.Collected{Mirror: m.Project + "/" + m.Connection + "/" + m.Path, Reason: why, Bytes: m.Bytes})
	}
	return out, err
}

// PullRequests open pull requests on forges (package pulls), and say
// whose a credential is there.
type PullRequests interface {
	Open(ctx context.Context, src mirror.Source, r pulls.Request) (pulls.PullRequest, error)
	Account(ctx context.Context, src mirror.Source) (pulls.Account, error)
}

// engineMaxCredential bounds a credential, as the engine bounds a
// session's (engine.MaxCredential).
const engineMaxCredential = 16 << 10

// Again checks old's remote repository for a session that takes its
// place: still granted, by the connection that granted it; the new
// session starts at the same commit.
func (s *Service) Again(ctx context.Context, old session.Session) (*session.Remote, error) {
	conns, err := s.Store.ListConnections(ctx, old.Project)
	if err != nil {
		return nil, err
	}
	c, _, err := forge.Resolve(old.Repo, conns)
	if err == nil && c.Name != old.Remote.Connection {
		err = fmt.Errorf("repository %s: connection %s that granted it is gone (%s grants it now: start a new session)", old.Repo, old.Remote.Connection, c.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: project %s: %w", errdefs.ErrInvalid, old.Project, err)
	}
	return old.Remote, nil
}

// AddConnection registers a connection of project to a forge (its
// admins only): the repositories it grants, its credential sealed and
// never shown again.
func (s *Service) AddConnection(ctx context.Context, p identity.Principal, project string, req wire.ConnectionRequest) (forge.Connection, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return forge.Connection{}, err
	}
	c := forge.Connection{Project: project, Name: req.Name, Kind: forge.Kind(req.Kind), URL: strings.TrimRight(req.URL, "/"),
		Repositories: req.Repositories, Username: req.Username, CreatedBy: p.Sender().String()}
	err := errors.Join(c.Validate(), checkCredential(req.Credential))
	if err != nil {
		return forge.Connection{}, fmt.Errorf("%w: connection: %w", errdefs.ErrInvalid, err)
	}
	base, _ := forge.ParseBase(c.URL)
	c.URL = base.String()
	sealed := s.Key.Encrypt([]byte(req.Credential), mirror.ConnectionAD(project, c.Name))
	out, err := s.Store.AddConnection(ctx, c, sealed)
	if err != nil {
		return out, err
	}
	return out, s.Access.Record(ctx, p, "connection_added", map[string]string{"project": project, "connection": c.Name, "url": c.URL,
		"repositories": strings.Join(c.Repositories, ",")})
}

// checkCredential checks a credential's shape: a token or password.
func checkCredential(cred string) error {
	if cred == "" || len(cred) > engineMaxCredential || strings.ContainsAny(cred, "\x00\r\n") {
		return fmt.Errorf("credential: want the forge's token or password, 1 to %d bytes on one line", engineMaxCredential)
	}
	return nil
}

// linkAD binds a link's sealed credential to its connection and person.
func linkAD(project, connection, user string) []byte {
	return []byte("paddock-forge-link-v1\n" + project + "\n" + connection + "\n" + user)
}

// LinkForge links the caller's own account on a connection's forge (any
// member who may accept sessions' changes): the pull requests of what
// they accept on its repositories are then opened with their credential,
// so that the forge names them as the author. The credential is checked
// with the forge, which says whose it is, then sealed and never shown
// again; linking again replaces it.
func (s *Service) LinkForge(ctx context.Context, p identity.Principal, project, connection string, req wire.LinkRequest) (forge.Link, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Steer, fmt.Sprintf("project %q", project)); err != nil {
		return forge.Link{}, err
	}
	if err := checkCredential(req.Credential); err != nil {
		return forge.Link{}, fmt.Errorf("%w: link: %w", errdefs.ErrInvalid, err)
	}
	c, _, err := s.Store.Connection(ctx, project, connection)
	if err != nil {
		return forge.Link{}, err
	}
	switch {
	case !c.Live():
		return forge.Link{}, fmt.Errorf("%w: connection %s of project %s is revoked", errdefs.ErrConflict, c.Name, project)
	case s.Pulls == nil || c.Kind == forge.Git:
		return forge.Link{}, fmt.Errorf("%w: connection %s is to a %s server, which has no pull requests to open as you", errdefs.ErrInvalid, c.Name, c.Kind)
	}
	a, err := s.Pulls.Account(ctx, mirror.Source{Project: project, Connection: c, Credential: []byte(req.Credential)})
	login := a.Login
	if errors.Is(err, pulls.ErrUnreachable) {
		return forge.Link{}, fmt.Errorf("%w: %s: %w; nothing was linked: try again when it answers", errdefs.ErrUnavailable, c.URL, err)
	}
	if err != nil {
		return forge.Link{}, fmt.Errorf("%w: %s did not take the credential: %w", errdefs.ErrInvalid, c.URL, err)
	}
	l := forge.Link{Project: project, Connection: c.Name, User: p.User, URL: c.URL, Login: login}
	out, err := s.Store.LinkForge(ctx, l, s.Key.Encrypt([]byte(req.Credential), linkAD(project, c.Name, p.User)))
	if err != nil {
		return out, err
	}
	return out, s.Access.Record(ctx, p, "forge_linked", map[string]string{"project": project, "connection": c.Name, "login": login})
}

// UnlinkForge deletes the caller's link to a connection: pull requests
// of what they accept are opened with the connection's credential again.
func (s *Service) UnlinkForge(ctx context.Context, p identity.Principal, project, connection string) error {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return err
	}
	if err := s.Store.UnlinkForge(ctx, project, connection, p.User); err != nil {
		return err
	}
	return s.Access.Record(ctx, p, "forge_unlinked", map[string]string{"project": project, "connection": connection})
}

// Links are the caller's own links to a project's connections, by
// connection (credentials never shown); a link made for a connection
// that is elsewhere now is left out, as it is never used.
func (s *Service) Links(ctx context.Context, p identity.Principal, project string) (map[string]forge.Link, error) {
	conns, err := s.Connections(ctx, p, project)
	if err != nil {
		return nil, err
	}
	out := map[string]forge.Link{}
	for _, c := range conns {
		l, _, ok, err := s.link(ctx, project, c, p.User)
		if err != nil {
			return nil, err
		}
		if ok {
			out[c.Name] = l
		}
	}
	return out, nil
}

// link is user's link to connection c of project and its sealed
// credential; ok is false when there is none, or only one made for the
// connection where it was before (never used: it is another forge's).
func (s *Service) link(ctx context.Context, project string, c forge.Connection, user string) (l forge.Link, sealed []byte, ok bool, err error) {
	l, sealed, err = s.Store.ForgeLink(ctx, project, c.Name, user)
	if errors.Is(err, errdefs.ErrNotFound) || err == nil && l.URL != c.URL {
		return forge.Link{}, nil, false, nil
	}
	return l, sealed, err == nil, err
}

// personal is src with the credential of by's link to its connection,
// when by is a person with one to the connection where it is now; else
// ok is false.
func (s *Service) personal(ctx context.Context, src mirror.Source, by session.Sender) (out mirror.Source, login string, ok bool, err error) {
	if by.Kind != session.SenderOperator {
		return src, "", false, nil
	}
	l, sealed, ok, err := s.link(ctx, src.Project, src.Connection, by.ID)
	if !ok {
		return src, "", false, err
	}
	cred, err := s.Key.Decrypt(sealed, linkAD(src.Project, src.Connection.Name, by.ID))
	if err != nil {
		return src, "", false, fmt.Errorf("%s's link to connection %s cannot be opened: %w", by.ID, src.Connection.Name, err)
	}
	src.Credential = cred
	return src, l.Login, true, nil
}

// author is who the commit by accepts is by, when they linked their
// account (own, login): they, as the forge names them now, where it
// gives an address for them; else Paddock (its Accepted-By trailer names
// the person), with why. Paddock is the commit's committer either way.
func (s *Service) author(ctx context.Context, src, own mirror.Source, login string) (workspace.Author, string) {
	a, err := s.Pulls.Account(ctx, own)
	if err != nil {
		return workspace.Author{}, fmt.Sprintf("the commit is Paddock's, not %s's: who your linked account is could not be asked (%v)", login, err)
	}
	name, email, ok := a.Author()
	if !ok {
		return workspace.Author{}, fmt.Sprintf("the commit is Paddock's, not %s's: %s gives no address for %s's commits", a.Login, src.Connection.Kind, a.Login)
	}
	return workspace.Author{Name: name, Email: email}, ""
}

// Connections lists a project's connections, the revoked ones too.
func (s *Service) Connections(ctx context.Context, p identity.Principal, project string) ([]forge.Connection, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return nil, err
	}
	return s.Store.ListConnections(ctx, project)
}

// RevokeConnection revokes a connection (its project's admins only): its
// credential is deleted, nothing is fetched with it again, and no new
// session names its repositories; live sessions keep their copies.
func (s *Service) RevokeConnection(ctx context.Context, p identity.Principal, project, name string) (forge.Connection, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return forge.Connection{}, err
	}
	c, err := s.Store.RevokeConnection(ctx, project, name, p.Sender().String())
	if err != nil {
		return c, err
	}
	return c, s.Access.Record(ctx, p, "connection_revoked", map[string]string{"project": project, "connection": name})
}

// Check checks a remote repository as a session is created on it:
// a live connection of the project grants it, and ref resolves (fetched
// into the project's mirror now, so the session starts from it). A
// refusal says why, at once.
func (s *Service) Check(ctx context.Context, project, repo, ref string) (*session.Remote, error) {
	conns, err := s.Store.ListConnections(ctx, project)
	if err != nil {
		return nil, err
	}
	c, r, err := forge.Resolve(repo, conns)
	if err != nil {
		return nil, fmt.Errorf("%w: project %s: %w", errdefs.ErrInvalid, project, err)
	}
	if err := mirror.CheckRef(ref); err != nil {
		return nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	if s.Mirrors == nil {
		return nil, s.noFetches()
	}
	rem := session.Remote{Connection: c.Name, URL: r.URL, Path: r.Path, Ref: ref}
	src, err := mirror.SourceOf(ctx, s.Store, s.Key, project, rem)
	if err != nil {
		return nil, err
	}
	commit, _, err := s.Mirrors.Resolve(ctx, src, ref)
	switch {
	case errors.Is(err, mirror.ErrUnknownRef):
		return nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	case errors.Is(err, mirror.ErrUnreachable):
		return nil, fmt.Errorf("%w: %w; try again when it answers", errdefs.ErrUnavailable, err)
	case errors.Is(err, mirror.ErrRefused):
		return nil, fmt.Errorf("%w: %w", errdefs.ErrDenied, err)
	case err != nil:
		return nil, err
	}
	rem.Commit = commit
	return &rem, nil
}

// Deliver delivers an accepted snapshot of a session on a remote
// repository: its commit (the accepted one, with its Paddock-Session and
// Accepted-By trailers) becomes branch paddock/ID of the project's
// mirror, which is pushed to the forge (never forced), and a pull request
// from it is opened, or the one open already found. The agent pushes
// nothing: Paddock does, once a person accepted, with their own linked
// credential (Service.personal) where they linked one and the forge takes
// it, else with the connection's. It gives the accepted commit's author
// (by, where their link allows: Service.author) with why it is Paddock
// when their link could not be used, and land, which delivers the
// commit once made and says where it went.
func (s *Service) Deliver(ctx context.Context, x session.Session, by session.Sender) (workspace.Author, string, func(x session.Session, next string) (string, error)) {
	src, srcErr := mirror.SourceOf(ctx, s.Store, s.Key, x.Project, *x.Remote)
	// As the person who accepted, where they linked their account: their
	// credential pushes the branch and opens the pull request; where the
	// forge refuses it, the connection's does, saying why.
	var own mirror.Source
	var login string
	var linked bool
	var perr error
	var author workspace.Author
	var why string
	if srcErr == nil {
		own, login, linked, perr = s.personal(ctx, src, by)
		if linked && s.Pulls != nil {
			author, why = s.author(ctx, src, own, login)
		}
	}
	return author, why, func(x session.Session, next string) (string, error) {
		if s.Mirrors == nil {
			return "", s.noFetches()
		}
		if srcErr != nil {
			return "", fmt.Errorf("nothing was accepted: %w", srcErr)
		}
		// The mirror holds the session's base (fetched again if not).
		if _, err := s.Mirrors.Mirror(ctx, src, x.Remote.Ref, x.Remote.Commit); err != nil {
			return "", forgeErr(err)
		}
		branch := "paddock/" + x.ID
		var local error
		written := false
		write := func(dir string) error {
			if !written {
				written, local = true, workspace.Branch(s.Bounded(ctx), x.Workdir, x.BaseCommit, next, dir, branch)
			}
			return local
		}
		where, pushed := fmt.Sprintf("commit %s on branch %s of %s", next, branch, x.Remote.URL), src
		if linked {
			pushed = own
		}
		err := s.Mirrors.Deliver(ctx, pushed, next, branch, write)
		if linked && local == nil && err != nil && !errors.Is(err, mirror.ErrUnreachable) {
			// Refused as them (their token revoked, no write access, a
			// scope it lacks): the connection's pushes it, and its error,
			// if it fails too, is the one told.
			where += fmt.Sprintf(" (your linked account %s could not push it: %v; the connection's credential pushed it)", login, err)
			err = s.Mirrors.Deliver(ctx, src, next, branch, write)
		} else if linked && err == nil {
			where += ", pushed as " + login
		}
		if local != nil {
			return "", fmt.Errorf("%w: nothing was accepted: %w", errdefs.ErrConflict, local)
		}
		if err != nil {
			return "", forgeErr(err)
		}
		if s.Pulls == nil {
			return where, nil
		}
		base := ""
		if x.Remote.Ref != "" && s.Mirrors.IsBranch(ctx, src, x.Remote.Ref) {
			base = x.Remote.Ref
		}
		title := x.DisplayTitle
		if title == "" {
			title = "Changes of Paddock session " + x.ID
		}
		body := fmt.Sprintf("Opened by Paddock for session %s, accepted by %s.\n\nThe session's transcript: `paddock attach %s`; its audit log: `paddock audit show %s`.\n\nPaddock-Session: %s\nAccepted-By: %s\n",
			x.ID, by.String(), x.ID, x.ID, x.ID, by.String())
		req := pulls.Request{Head: branch, Base: base, Title: title, Body: body, From: mirror.PullNumber(x.Remote.Ref),
			Comment: fmt.Sprintf("Paddock session %s worked on this pull request; its changes, accepted by %s, are in", x.ID, by.String())}
		if perr != nil {
			where += fmt.Sprintf(" (your linked account could not be used: %v; the connection's credential was used)", perr)
		}
		var pr pulls.PullRequest
		if linked {
			if pr, err = s.Pulls.Open(ctx, own, req); err == nil {
				where += ", opened as " + login
			} else if pr.Number != 0 {
				// Opened as them; only the comment on the pull request it
				// started from failed.
				where += fmt.Sprintf(", opened as %s; %v", login, err)
				err = nil
			} else {
				where += fmt.Sprintf(" (your linked account %s was refused: %v; the connection's credential was used)", login, err)
			}
		}
		if !linked || err != nil {
			pr, err = s.Pulls.Open(ctx, src, req)
		}
		switch {
		case errors.Is(err, pulls.ErrNone):
			return where, nil
		case err != nil:
			// The branch is pushed: the acceptance stands, and says why
			// no pull request came of it.
			return where + "; no pull request: " + err.Error(), nil
		}
		// The address is made from the connection's, not taken from the
		// forge's answer.
		link := forge.PullURL(src.Connection.Kind, x.Remote.URL, pr.Number)
		if _, err := s.Store.Bind(ctx, session.Binding{SessionID: x.ID, Project: x.Project, Kind: session.BindPullRequest, Connection: x.Remote.Connection,
			Repo: x.Remote.Path, Number: pr.Number, URL: link, Held: true}); err != nil {
			return "", err
		}
		return fmt.Sprintf("pull request #%d %s (%s)", pr.Number, link, where), nil
	}
}

// noFetches says this server fetches no remote repositories, and why.
func (s *Service) noFetches() error {
	why := s.FetchErr
	if why == nil {
		why = errors.New("its sandbox is unavailable")
	}
	return fmt.Errorf("%w: this server fetches no remote repositories: %w", errdefs.ErrUnavailable, why)
}

// forgeErr says what a fetch or a push to the forge that failed means to
// the caller: a forge that is down, or a refusal.
func forgeErr(err error) error {
	switch {
	case errors.Is(err, mirror.ErrUnreachable):
		return fmt.Errorf("%w: nothing was accepted: %w; try again when it answers", errdefs.ErrUnavailable, err)
	case errors.Is(err, mirror.ErrRefused), errors.Is(err, errdefs.ErrDenied):
		return fmt.Errorf("%w: nothing was accepted: %w", errdefs.ErrDenied, err)
	case strings.Contains(err.Error(), "rejected"), strings.Contains(err.Error(), "non-fast-forward"):
		return fmt.Errorf("%w: nothing was accepted: the forge's branch moved (%w)", errdefs.ErrConflict, err)
	}
	return fmt.Errorf("nothing was accepted: %w", err)
}

// BindStart binds a session started on a pull request (its ref #N) to
// it, held: it works on that pull request until the forge says it closed.
func (s *Service) BindStart(ctx context.Context, x session.Session) error {
	n := mirror.PullNumber(x.Remote.Ref)
	if n == 0 {
		return nil
	}
	c, _, err := s.Store.Connection(ctx, x.Project, x.Remote.Connection)
	if err != nil {
		return err
	}
	_, err = s.Store.Bind(ctx, session.Binding{SessionID: x.ID, Project: x.Project, Kind: session.BindPullRequest, Connection: c.Name,
		Repo: x.Remote.Path, Number: n, URL: forge.PullURL(c.Kind, x.Remote.URL, n), Held: true})
	return err
}

// Release releases the bindings of a project's sessions to the pull
// request a delivery of trigger t (release: true) names on the trigger's
// repository (pullNumberOf).
func (s *Service) Release(ctx context.Context, project string, t spec.TriggerSpec, payload any, by session.Sender) (int, error) {
	conn, repo, n, err := s.pullOf(ctx, project, t, payload, "releases bindings")
	if errors.Is(err, errNoPull) {
		return 0, fmt.Errorf("%w: trigger %s releases bindings, but %w", errdefs.ErrInvalid, t.Name, err)
	}
	if err != nil || n == 0 {
		return 0, err
	}
	return s.Store.ReleaseBindings(ctx, project, conn, repo, n, by.String())
}

// Bound lists the live bindings of a project's sessions to the pull
// request a delivery of trigger t (routing: bound) names on the trigger's
// repository: where its review comments and CI results go.
func (s *Service) Bound(ctx context.Context, project string, t spec.TriggerSpec, payload any) ([]session.Binding, error) {
	conn, repo, n, err := s.pullOf(ctx, project, t, payload, "routes to bound sessions")
	if errors.Is(err, errNoPull) {
		return nil, nil // an issue's comment, a check of a branch: no session is bound to it
	}
	if err != nil || n == 0 {
		return nil, err
	}
	return s.Store.BoundTo(ctx, project, conn, repo, n)
}

// pullOf is the pull request a delivery of trigger t names on the
// trigger's repository: its connection, path and number (0: the delivery
// is another repository's).
func (s *Service) pullOf(ctx context.Context, project string, t spec.TriggerSpec, payload any, what string) (string, string, int64, error) {
	conns, err := s.Store.ListConnections(ctx, project)
	if err != nil {
		return "", "", 0, err
	}
	c, r, err := forge.Resolve(t.Repo, conns)
	if err != nil {
		return "", "", 0, fmt.Errorf("%w: trigger %s %s on %s: %w", errdefs.ErrInvalid, t.Name, what, t.Repo, err)
	}
	if named := repositoryOf(payload); named != "" && named != r.Path {
		return "", "", 0, nil // another repository's pull request (a webhook for many)
	}
	n := pullNumberOf(payload, r.Path)
	if n == 0 {
		return "", "", 0, errNoPull
	}
	return c.Name, r.Path, n, nil
}

// errNoPull says a delivery names no pull request.
var errNoPull = errors.New("the delivery names no pull request (pull_request.number, a pull request's issue.number, " +
	"merge_request.iid, object_attributes.iid, check_run or check_suite pull_requests, or number)")

// repositoryOf reads the repository a forge's delivery names (GitHub's
// and Gitea's repository.full_name, GitLab's project.path_with_namespace),
// "" when it names none.
func repositoryOf(payload any) string {
	m, _ := payload.(map[string]any)
	if r, ok := m["repository"].(map[string]any); ok {
		if n, ok := r["full_name"].(string); ok {
			return n
		}
	}
	if p, ok := m["project"].(map[string]any); ok {
		if n, ok := p["path_with_namespace"].(string); ok {
			return n
		}
	}
	return ""
}

// pullNumberOf reads the pull request on repository path (OWNER/NAME) a
// forge's delivery is about: a pull request's event, a comment on one, a
// check's result; 0 when it names none. A GitLab delivery (object_kind)
// names a merge request as its object, or as the merge request a note or
// pipeline is of: its issues, work items and branch pipelines, numbered
// apart from merge requests, name none.
func pullNumberOf(payload any, path string) int64 {
	m, _ := payload.(map[string]any)
	num := func(v any) int64 {
		switch x := v.(type) {
		case json.Number:
			if n, err := x.Int64(); err == nil && n > 0 {
				return n
			}
		case float64:
			if x > 0 && x == float64(int64(x)) {
				return int64(x)
			}
		}
		return 0
	}
	field := func(object, name string) int64 {
		o, _ := m[object].(map[string]any)
		return num(o[name])
	}
	if kind, ok := m["object_kind"].(string); ok {
		switch kind {
		case "merge_request":
			return field("object_attributes", "iid")
		case "note", "pipeline":
			return field("merge_request", "iid")
		}
		return 0
	}
	if n := field("pull_request", "number"); n != 0 {
		return n
	}
	// A comment on a pull request's conversation: an issue that is one
	// (GitHub's issue.pull_request, Gitea's is_pull).
	if issue, ok := m["issue"].(map[string]any); ok {
		if issue["pull_request"] != nil || m["is_pull"] == true {
			return num(issue["number"])
		}
		return 0
	}
	// A check's result: the first pull request it ran for into this
	// repository (the list may hold other repositories' too).
	for _, check := range []string{"check_run", "check_suite"} {
		c, ok := m[check].(map[string]any)
		if !ok {
			continue
		}
		prs, _ := c["pull_requests"].([]any)
		for _, x := range prs {
			pr, _ := x.(map[string]any)
			base, _ := pr["base"].(map[string]any)
			repo, _ := base["repo"].(map[string]any)
			if url, _ := repo["url"].(string); strings.HasSuffix(url, "/repos/"+path) {
				return num(pr["number"])
			}
		}
		return 0
	}
	return num(m["number"])
}

// Bindings lists what session id is bound to (pull requests), released
// ones too.
func (s *Service) Bindings(ctx context.Context, caller identity.Principal, id string) ([]session.Binding, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.Access.Allow(ctx, caller, x.Project, identity.Read, fmt.Sprintf("session %q", id)); err != nil {
		return nil, err
	}
	return s.Store.Bindings(ctx, x.ID)
}
