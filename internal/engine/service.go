// Package engine is the core's one door for sessions: the use cases
// every transport calls (create, send, stop, the diff and its review,
// parks, triggers, policies, collection, and every read), each taking the
// caller and checking what it may do before it acts. Rows are recorded
// first, then the session's workflow (package workflows) is woken.
package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/attachdesk"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/health"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/remote"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workflows"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Service is what the API offers: it records rows first, then wakes the
// session's workflow.
type Service struct {
	Store     store.Store
	Temporal  client.Client
	Providers *provider.Registry
	Tools     tool.Set
	// Copies is where sessions' working copies and caches live.
	Copies *copies.Set
	// RetainFailed is how long a failed session's working copy is kept
	// for inspection before GC collects it.
	RetainFailed time.Duration
	// Sealer seals audit logs before their sessions are reaped, and
	// verifies the seals.
	Sealer *auditlog.Sealer
	// Remotes are the sessions' remote repositories: connections, the
	// check at creation, delivery to the forge, bindings.
	Remotes *remote.Service
	// ContentKey seals and opens content at rest (audit content projects
	// retain, sessions' credentials).
	ContentKey durable.Cipher
	// Attachments are the files messages give.
	Attachments *attachdesk.Service
	// Access says who may do what; every use case asks it first.
	Access *access.Service
	// Audit is the audit log's use cases.
	Audit *auditlog.Service
	// Logger reports what callers do not see (failed authentications);
	// discarded when nil.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// RepositoryRoots confine the repositories sessions copy: a session of
	// project P copies only repositories under ROOT/P/ of one of them.
	// Empty: on one person's server (one user, one project), any
	// repository the server can read; on a shared one, only a server
	// administrator may name a repository.
	RepositoryRoots []string
	// Defaults is the server's default session budget (agents override
	// it), as the activities apply it.
	Defaults bound.Limits
	// DataDir is the server's data directory: never a repository, nor
	// inside or around one a session copies.
	DataDir string
	// Health is the node's health, for its administrators.
	Health *health.Service

	// answerMu makes checking an answer and recording it one step, so two
	// concurrent answers to one question cannot both be recorded.
	answerMu sync.Mutex
	// diffs remembers the snapshots GET …/diff handed out, per session and
	// base: only those can be accepted.
	diffsMu sync.Mutex
	diffs   map[string]map[string]bool
}

// Known returns the name checks specs are validated with.
func (s Projects) Known() spec.Known {
	return spec.Known{Tool: func(n string) bool { _, ok := s.Tools[n]; return ok }, Provider: s.Providers.Has, Secret: secret.Rule, Effort: provider.CheckEffort}
}

// ApplyAgents parses and validates every spec in the YAML, then applies all
// of them in one transaction: nothing is half-applied.
func (s Projects) ApplyAgents(ctx context.Context, p identity.Principal, yamlText []byte) ([]wire.Applied, error) {
	agents, err := spec.Parse(bytes.NewReader(yamlText), s.Projects().Known())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	for _, a := range agents {
		if err := s.Access.Allow(ctx, p, a.Project, identity.Manage, fmt.Sprintf("project %q", a.Project)); err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
	}
	if err := s.checkTriggers(ctx, agents); err != nil {
		return nil, err
	}
	recs := make([]spec.Record, len(agents))
	for i, a := range agents {
		recs[i] = spec.Record{Project: a.Project, Name: a.Name, Spec: a.JSON(), Digest: a.Digest(), Concurrency: a.Concurrency}
	}
	var before []spec.Agent
	for _, a := range agents {
		if old, err := s.Store.GetAgent(ctx, a.Project, a.Name); err == nil {
			var sp spec.Agent
			if json.Unmarshal(old.Spec, &sp) == nil {
				before = append(before, sp)
			}
		}
	}
	res, err := s.Store.ApplyAgents(ctx, recs)
	if err != nil {
		return nil, err
	}
	if err := s.reconcileSchedules(ctx, before, agents); err != nil {
		return nil, fmt.Errorf("agents applied, but their schedules: %w", err)
	}
	out := make([]wire.Applied, len(res))
	for i, r := range res {
		out[i] = wire.Applied{Project: agents[i].Project, Name: agents[i].Name, Result: r}
	}
	return out, nil
}

// DefaultModel runs ad-hoc sessions when no model is named.
const DefaultModel = "replay/demo"

// Create snapshots the agent onto a new session with its start
// command, in one transaction, then starts its workflow; caller must be
// allowed to start sessions in the project.
func (s Sessions) Create(ctx context.Context, caller identity.Principal, req wire.CreateRequest) (session.Session, error) {
	if req.Project == "" {
		req.Project = spec.DefaultProject
	}
	if err := identity.CheckName(identity.ProjectName, req.Project); err != nil {
		return session.Session{}, err
	}
	if err := s.Access.Allow(ctx, caller, req.Project, identity.Start, fmt.Sprintf("project %q", req.Project)); err != nil {
		return session.Session{}, err
	}
	if req.Approver != "" {
		if err := s.Access.CheckApprover(ctx, req.Project, req.Approver); err != nil {
			return session.Session{}, err
		}
	}
	return s.createSession(ctx, req, caller.Sender())
}

// createSession is CreateSession for by, whoever it is (a trigger too).
func (s *Service) createSession(ctx context.Context, req wire.CreateRequest, by session.Sender) (session.Session, error) {
	return s.create(ctx, req, by, nil)
}

// create is createSession, for a delegated session when child is set.
func (s *Service) create(ctx context.Context, req wire.CreateRequest, by session.Sender, child *Child) (session.Session, error) {
	if req.Project == "" {
		req.Project = spec.DefaultProject
	}
	if err := errors.Join(req.Check(), callerKey(req.IdempotencyKey, by)); err != nil {
		return session.Session{}, err
	}
	var remote *session.Remote
	if forge.IsRemote(req.Repo) {
		if s.Remotes == nil {
			return session.Session{}, fmt.Errorf("%w: repository %s: this server takes no remote repositories", errdefs.ErrInvalid, clip.String(req.Repo, 64))
		}
		var err error
		if remote, err = s.Remotes.Check(ctx, req.Project, req.Repo, req.Ref); err != nil {
			return session.Session{}, err
		}
		req.Repo = remote.URL
	} else {
		if req.Ref != "" {
			return session.Session{}, fmt.Errorf("%w: ref %q: a ref names where a remote repository's copy starts; a local repository is copied as it is", errdefs.ErrInvalid, clip.String(req.Ref, 64))
		}
		if err := s.mayCopy(ctx, req.Repo, req.Project, by); err != nil {
			return session.Session{}, err
		}
		if err := s.checkRepo(req.Repo, req.Project); err != nil {
			return session.Session{}, err
		}
	}
	var sp spec.Agent
	switch {
	case child != nil:
		sp = child.Spec
	case req.Agent == "":
		sp = spec.Agent{Name: "adhoc", Project: req.Project, Model: DefaultModel}
	default:
		rec, err := s.Store.GetAgent(ctx, req.Project, req.Agent)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				return session.Session{}, fmt.Errorf("agent %q is not applied in project %q; apply it with `paddock apply -f AGENT.yaml`: %w", req.Agent, req.Project, errdefs.ErrNotFound)
			}
			return session.Session{}, err
		}
		if err := json.Unmarshal(rec.Spec, &sp); err != nil {
			return session.Session{}, fmt.Errorf("agent %q: stored spec unreadable: %w", req.Agent, err)
		}
	}
	if req.Model != "" { // the agent's effort goes where the model takes it
		sp.Model, sp.ReasoningEffort = req.Model, provider.Taken(req.Model, sp.ReasoningEffort)
	}
	sp.Defaults()
	if err := sp.Validate(s.Projects().Known()); err != nil {
		return session.Session{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	if _, _, err := s.Providers.Resolve(sp.Model); err != nil {
		return session.Session{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	pol, err := s.effectivePolicy(ctx, req.Project, &sp, req.Policy)
	if err != nil {
		return session.Session{}, err
	}
	if child != nil {
		// Never looser than the delegating session's, whatever the
		// project's policy became since it was pinned.
		eff, _ := policy.Pinned(pol.json)
		pol = pin(policy.Within(child.Floor, eff))
	}
	input := req.Message
	if input == "" {
		input = sp.InitialPrompt
	}
	if err := provider.CheckEffort(sp.Model, req.ReasoningEffort); err != nil {
		return session.Session{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	files, err := s.Attachments.Resolve(ctx, attachdesk.Message{Project: req.Project, By: by, Model: sp.Model, Refs: req.Attachments, Retry: req.IdempotencyKey != ""})
	if err != nil {
		return session.Session{}, err
	}
	kind, payload := session.KindStart, json.RawMessage(`{}`)
	if strings.TrimSpace(input) != "" {
		kind = session.KindStartWithMessage
		payload, _ = json.Marshal(session.MessagePayload{Message: input, ReasoningEffort: req.ReasoningEffort, Attachments: files.Refs})
	}
	id := uuid.NewString()
	var gate *session.Park
	if child == nil {
		// (A delegated session starts with the credentials and the
		// identity its delegating session was given.)
		if gate, err = s.startGate(ctx, id, req.Project, by, sp); err != nil {
			return session.Session{}, err
		}
	}
	x, created, err := s.Store.CreateSession(ctx, store.NewSession{
		ID: id, Project: req.Project, AwaitStart: gate, SpendCapUSD: sp.MaxPerSessionUSD, DisplayTitle: sp.Title(input),
		Agent: spec.Record{Project: sp.Project, Name: sp.Name, Spec: sp.JSON(), Digest: sp.Digest(), Concurrency: sp.Concurrency},
		Input: input, Repo: req.Repo, Remote: remote, CreatedBy: by, StartKind: kind, StartPayload: payload, IdempotencyKey: scopedKey(req.IdempotencyKey, req.Project, by),
		Policy: pol.json, PolicyDigest: pol.digest, Interactive: !req.NonInteractive, Approver: req.Approver,
	})
	if err != nil {
		return x, err
	}
	if !created {
		what := sameSession(x, sp, input, req)
		if what == "" && x.PolicyDigest != pol.digest {
			what = "policy"
		}
		if what != "" {
			return session.Session{}, &errdefs.KeyConflictError{Key: req.IdempotencyKey, SessionID: x.ID, Original: "session " + x.ID, What: what}
		}
	}
	if remote != nil && created {
		if err := s.Remotes.BindStart(ctx, x); err != nil {
			_ = s.Store.FailSession(ctx, x.ID, err.Error())
			return x, err
		}
	}
	if !created {
		files = attachdesk.Binding{} // a retry's were bound the first time
	}
	if _, err := s.Attachments.Bind(ctx, x.ID, files); err != nil {
		_ = s.Store.FailSession(ctx, x.ID, err.Error())
		return session.Session{}, err
	}
	if child != nil && created && len(child.Credentials) > 0 {
		if err := s.inherit(ctx, child.From.ID, x.ID, child.Credentials); err != nil {
			_ = s.Store.FailSession(ctx, x.ID, err.Error())
			return x, err
		}
	}
	return s.started(ctx, x, created, gate, sp, kind)
}

// repoAgain checks old's repository again for a session that takes its
// place, as for any new session (the rules, roots, the data directory, or
// the project's connections, may have changed since).
func (s *Service) repoAgain(ctx context.Context, old session.Session, by session.Sender) (*session.Remote, error) {
	if old.Remote != nil {
		return s.Remotes.Again(ctx, old)
	}
	return nil, errors.Join(s.mayCopy(ctx, old.Repo, old.Project, by), s.checkRepo(old.Repo, old.Project))
}

// sameSession reports what differs between an existing session and a
// create request that reused its idempotency key ("" when nothing does).
func sameSession(x session.Session, sp spec.Agent, input string, req wire.CreateRequest) string {
	var old spec.Agent
	_ = json.Unmarshal(x.AgentSpec, &old)
	switch {
	case x.Project != req.Project:
		return "project"
	case x.Agent != sp.Name:
		return "agent"
	case old.Model != sp.Model:
		return "model"
	case x.Input != input:
		return "message"
	case x.Repo != req.Repo:
		return "repo"
	case x.Remote != nil && x.Remote.Ref != req.Ref:
		return "ref"
	case x.Interactive == req.NonInteractive:
		return "nonInteractive"
	case x.Approver != req.Approver:
		return "approver"
	}
	return ""
}

// scopedKey is the session idempotency key as stored: a caller's keys are
// theirs in their project (another's same key is another session, and no
// answer ever names a session of a project the caller cannot see); the
// platform's own keys (retries, successors, triggers) are global.
func scopedKey(key, project string, by session.Sender) string {
	if key == "" || (by.Kind != session.SenderOperator && by.Kind != session.SenderAgent) {
		return key
	}
	return "caller:" + project + "/" + string(by.Kind) + ":" + by.ID + "/" + key
}

// callerKey refuses an idempotency key a caller gives (of a session or a
// command) in the namespaces the platform keeps for its own: retries,
// successors, trigger spawns and deliveries, their flushes and parks'
// recoveries. A caller's key there could pre-empt the platform's.
func callerKey(key string, by session.Sender) error {
	if by.Kind != session.SenderOperator && by.Kind != session.SenderAgent {
		return nil // the platform's own (triggers, the system)
	}
	for _, prefix := range []string{"retry:", "successor:", reservedTrigger, reservedDelivery, "flush:", "recover-", revokeKey, durable.CollectedKey, durable.StoppedKey} {
		if strings.HasPrefix(key, prefix) {
			return fmt.Errorf("%w: idempotencyKey %q: keys starting with %q are reserved for the platform", errdefs.ErrInvalid, clip.String(key, 64), prefix)
		}
	}
	return nil
}

// mayCopy refuses a repository the session's project may not copy, with
// one message whether the path exists or not: whatever holds the server's
// data directory (its database, keys and other sessions' copies), and,
// on a shared server without repository roots, any repository named by
// someone other than a server administrator.
func (s *Service) mayCopy(ctx context.Context, repo, project string, by session.Sender) error {
	if repo == "" || !filepath.IsAbs(repo) {
		return nil // checkRepo explains
	}
	refused := fmt.Errorf("%w: repository %s may not be copied by project %s's sessions", errdefs.ErrInvalid, clip.String(repo, 64), project)
	by = by.Requester()
	if s.DataDir != "" {
		data := filepath.Clean(s.DataDir)
		if real, err := filepath.EvalSymlinks(data); err == nil {
			data = real
		}
		paths := []string{filepath.Clean(repo), realPath(repo)}
		if dirs, err := workspace.Locate(repo); err == nil {
			paths = append(paths, dirs.Paths()...) // a worktree's
		}
		for _, path := range paths {
			if within(path, data) || within(data, path) {
				return fmt.Errorf("%w (it holds or lies in the server's data directory)", refused)
			}
		}
	}
	if len(s.RepositoryRoots) > 0 {
		return nil // checkRepo confines it to the project's root
	}
	if by.Kind == session.SenderOperator {
		if u, err := s.Store.GetUser(ctx, by.ID); err == nil && u.Admin {
			return nil
		}
	}
	if shared, err := s.shared(ctx); err != nil || !shared {
		return err
	}
	return fmt.Errorf("%w: this server has several users or projects and no repository roots, so only a server administrator names repositories; ask one to set PADDOCK_REPOSITORY_ROOTS (project %s's repositories under ROOT/%s/), or omit the repository", refused, project, project)
}

// shared says the server has more than one user or project: repositories
// must then be confined to their projects.
func (s *Service) shared(ctx context.Context) (bool, error) {
	users, err := s.Store.ListUsers(ctx)
	if err != nil {
		return false, err
	}
	projects, err := s.Store.ListProjects(ctx)
	if err != nil {
		return false, err
	}
	return len(users) > 1 || len(projects) > 1, nil
}

// realPath is path with every link resolved, or path itself when it
// cannot be (it does not exist).
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

// within says path is dir or lies under it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// checkRepo refuses a repository that cannot be copied, when the session
// is created rather than when it starts: a local path must be a git
// repository (a working tree, or a bare one). Remote URLs are refused: the
// host's git never fetches on a caller's behalf (it would reach any
// address the server can). With repository roots, the repository must be
// the project's: under ROOT/PROJECT/ once every link is resolved, and one
// outside is refused before anything says whether it exists.
func (s *Service) checkRepo(repo, project string) error {
	if repo == "" {
		return nil
	}
	if strings.Contains(repo, "://") || strings.Contains(repo, "::") {
		return fmt.Errorf("%w: repository %q: not a path, and not a remote repository Paddock fetches: name one by its https address (or OWNER/NAME) on a connection of the project (paddock connections add)", errdefs.ErrInvalid, clip.String(repo, 64))
	}
	if !filepath.IsAbs(repo) {
		// Relative to what? The server's working directory is not the
		// caller's, and the CLI would later apply the diff to its own.
		return fmt.Errorf("%w: repository %q: want an absolute path", errdefs.ErrInvalid, clip.String(repo, 64))
	}
	if len(s.RepositoryRoots) > 0 {
		outside := fmt.Errorf("%w: repository %s is not one of project %s's (under %s): sessions copy only their project's repositories",
			errdefs.ErrInvalid, clip.String(repo, 64), project, filepath.Join(s.RepositoryRoots[0], project))
		if !s.projectRepo(filepath.Clean(repo), project) {
			return outside
		}
		real, err := filepath.EvalSymlinks(repo)
		if err == nil && !s.projectRepo(real, project) {
			return outside
		}
	}
	st, err := os.Stat(repo)
	if err != nil {
		return fmt.Errorf("%w: repository %s does not exist (or cannot be read): name a git repository, or none for an empty working copy (paddock run --empty; in the web app, leave Repository empty)", errdefs.ErrInvalid, repo)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: repository %s is not a directory", errdefs.ErrInvalid, repo)
	}
	dirs, err := workspace.Locate(repo)
	if errors.Is(err, workspace.ErrNotGit) {
		for dir := filepath.Dir(repo); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
				return fmt.Errorf("%w: %s is a folder inside the git repository %s: name %s itself (sessions work on a whole repository)", errdefs.ErrInvalid, repo, dir, dir)
			}
		}
		return fmt.Errorf("%w: %s is not a git repository (run `git init` there and commit, or name none for an empty working copy: paddock run --empty; in the web app, leave Repository empty)", errdefs.ErrInvalid, repo)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	// A worktree's git directories lie elsewhere: the copy reads them,
	// so they are the project's too.
	for _, dir := range dirs.Paths() {
		if len(s.RepositoryRoots) > 0 && !s.projectRepo(dir, project) {
			return fmt.Errorf("%w: repository %s keeps its git data in %s, which is not one of project %s's repositories (under %s)",
				errdefs.ErrInvalid, clip.String(repo, 64), dir, project, filepath.Join(s.RepositoryRoots[0], project))
		}
	}
	return nil
}

// projectRepo says path lies under ROOT/project/ of a repository root.
func (s *Service) projectRepo(path, project string) bool {
	for _, root := range s.RepositoryRoots {
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		dir := filepath.Join(root, project)
		if strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Policy returns an existing project's policy (the default policy when
// it has none of its own); a project never created is not found. The
// default project always exists.
func (s Projects) Policy(ctx context.Context, caller identity.Principal, project string) (*policy.Policy, error) {
	if err := s.Access.Allow(ctx, caller, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return nil, err
	}
	if err := s.Projects().Check(ctx, project); err != nil {
		return nil, err
	}
	return s.projectPolicy(ctx, project)
}

// Check refuses a project name from a caller that is not valid
// (errdefs.ErrInvalid) or names a project never created (ErrNotFound). The
// default project always exists.
func (s Projects) Check(ctx context.Context, project string) error {
	if err := identity.CheckName(identity.ProjectName, project); err != nil {
		return err
	}
	if project == spec.DefaultProject {
		return nil
	}
	// Every way a project comes to be (created, an agent, a policy, a
	// session) records it in the projects table.
	names, err := s.Store.ListProjects(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(names, project) {
		return fmt.Errorf("project %q does not exist (create it with `paddock projects create %s`, or apply an agent to it): %w", project, project, errdefs.ErrNotFound)
	}
	return nil
}

type pinnedPolicy struct {
	json   json.RawMessage
	digest string
}

// projectPolicy returns a project's policy, or the default policy.
func (s *Service) projectPolicy(ctx context.Context, project string) (*policy.Policy, error) {
	raw, err := s.Store.GetProjectPolicy(ctx, project)
	if err != nil || raw == nil {
		return policy.Default(), err
	}
	var p policy.Policy
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("project %s: stored policy unreadable: %w", project, err)
	}
	return &p, nil
}

// SetPolicy validates a policy written in YAML and makes it the
// project's; future sessions pin it, running ones keep theirs.
func (s Projects) SetPolicy(ctx context.Context, caller identity.Principal, project string, yamlText []byte) (*policy.Policy, error) {
	if err := s.Access.Allow(ctx, caller, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return nil, err
	}
	if err := identity.CheckName(identity.ProjectName, project); err != nil {
		return nil, err
	}
	if policy.Empty(yamlText) {
		return nil, fmt.Errorf("%w: empty policy: send the policy YAML (e.g. `default: ask`)", errdefs.ErrInvalid)
	}
	p, err := policy.Parse(yamlText)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	raw, _ := json.Marshal(p)
	return p, s.Store.SetProjectPolicy(ctx, project, raw)
}

// effectivePolicy is the project's policy tightened by the agent's and the
// request's: the policy a session pins.
func (s *Service) effectivePolicy(ctx context.Context, project string, sp *spec.Agent, requested string) (pinnedPolicy, error) {
	p, err := s.effective(ctx, project, sp, requested)
	if err != nil {
		return pinnedPolicy{}, err
	}
	return pin(p), nil
}

// effective is the project's policy tightened by the agent's and the
// requested one.
func (s *Service) effective(ctx context.Context, project string, sp *spec.Agent, requested string) (*policy.Policy, error) {
	p, err := s.projectPolicy(ctx, project)
	if err != nil {
		return nil, err
	}
	agentPolicy, err := sp.PolicyValue()
	if err != nil {
		return nil, fmt.Errorf("%w: agent %s: %w", errdefs.ErrInvalid, sp.Name, err)
	}
	p = policy.Stricter(p, agentPolicy)
	if requested != "" {
		if policy.Empty([]byte(requested)) {
			return nil, fmt.Errorf("%w: policy: empty: give the policy YAML (e.g. `default: ask`), or leave policy out", errdefs.ErrInvalid)
		}
		rp, err := policy.Parse([]byte(requested))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
		}
		p = policy.Stricter(p, rp)
	}
	return p, nil
}

// pin is a policy as a session pins it.
func pin(p *policy.Policy) pinnedPolicy {
	raw, _ := json.Marshal(p)
	return pinnedPolicy{json: raw, digest: p.Digest()}
}

// Decide approves or rejects a pending approval as by, then wakes
// the session. When the session names an approver, only they may decide.
func (s Gates) Decide(ctx context.Context, caller identity.Principal, id string, approve bool, note string) (session.Approval, error) {
	if _, _, err := s.Gates().ApprovalFor(ctx, caller, id, identity.Approve); err != nil {
		return session.Approval{}, err
	}
	by := caller.Sender()
	if err := checkNote("note", note); err != nil {
		return session.Approval{}, err
	}
	ap, err := s.Store.GetApproval(ctx, id)
	if err != nil {
		return ap, err
	}
	x, err := s.Store.GetSession(ctx, ap.SessionID)
	if err != nil {
		return ap, err
	}
	if x.Approver != "" && x.Approver != by.ID {
		return ap, fmt.Errorf("session %s names %s as its approver, not %s: %w", x.ID, x.Approver, by.ID, errdefs.ErrDenied)
	}
	status := session.ApprovalRejected
	if approve {
		status = session.ApprovalApproved
	}
	ap, err = s.Store.DecideApproval(ctx, id, status, &by, note)
	if err != nil {
		return ap, err
	}
	_, err = s.Temporal.SignalWithStartWorkflow(ctx, session.WorkflowID(ap.SessionID), workflows.SignalApproval, ap.ID, client.StartWorkflowOptions{
		ID: session.WorkflowID(ap.SessionID), TaskQueue: workflows.TaskQueue, WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflows.SessionWorkflow, workflows.Input{SessionID: ap.SessionID, Provisioned: true})
	if err != nil {
		return ap, fmt.Errorf("approval %s recorded, but waking session %s failed: %w", id, ap.SessionID, err)
	}
	return ap, nil
}

// SpawnSuccessor creates the replacement of a replace: auto agent's ended
// session, on the agent's latest spec, with the predecessor's handoff
// attached to its kickoff. It is idempotent per predecessor.
func (s Sessions) SpawnSuccessor(ctx context.Context, old session.Session) (session.Session, error) {
	rec, err := s.Store.GetAgent(ctx, old.Project, old.Agent)
	if err != nil {
		return session.Session{}, fmt.Errorf("successor of %s: %w", old.ID, err)
	}
	var sp spec.Agent
	if err := json.Unmarshal(rec.Spec, &sp); err != nil {
		return session.Session{}, fmt.Errorf("successor of %s: agent spec unreadable: %w", old.ID, err)
	}
	sp.Defaults()
	msg := sp.OnReplace
	if msg == "" {
		msg = sp.InitialPrompt
	}
	if msg == "" {
		msg = "You replace an earlier session of this agent. Continue its work."
	}
	payload, _ := json.Marshal(session.MessagePayload{Message: msg, Handoff: old.Handoff})
	pol, err := s.effectivePolicy(ctx, old.Project, &sp, "")
	if err != nil {
		return session.Session{}, err
	}
	// The repository is checked again, as for any new session: the
	// rules (roots, the data directory) may have changed since.
	successor := session.Sender{Kind: session.SenderSystem, ID: "replacement-of-" + old.ID}
	remote, err := s.repoAgain(ctx, old, successor)
	if err != nil {
		return session.Session{}, err
	}
	x, _, err := s.Store.CreateSession(ctx, store.NewSession{
		Policy: pol.json, PolicyDigest: pol.digest, Interactive: old.Interactive, Approver: old.Approver,
		ID: uuid.NewString(), Project: old.Project, SpendCapUSD: sp.MaxPerSessionUSD, DisplayTitle: sp.Title(msg),
		Agent: spec.Record{Project: sp.Project, Name: sp.Name, Spec: sp.JSON(), Digest: sp.Digest(), Concurrency: sp.Concurrency},
		Input: msg, Repo: old.Repo, Remote: remote, CreatedBy: successor,
		StartKind: session.KindStartWithMessage, StartPayload: payload, IdempotencyKey: "successor:" + old.ID,
	})
	if err != nil {
		return x, err
	}
	return x, s.notify(ctx, x.ID, workflows.Notice{CommandID: x.ID + "-start", Kind: session.KindStartWithMessage})
}

// Retry creates a fresh session for a failed session's input, idempotently.
func (s Sessions) Retry(ctx context.Context, caller identity.Principal, id string) (session.Session, error) {
	old, err := s.Sessions().For(ctx, caller, id, identity.Start)
	if err != nil {
		return old, err
	}
	by := caller.Sender()
	if old.Status != session.StatusFailed {
		return old, fmt.Errorf("session %s is %s; only a failed session can be retried: %w", id, old.Status, errdefs.ErrConflict)
	}
	var sp spec.Agent
	if err := json.Unmarshal(old.AgentSpec, &sp); err != nil {
		return old, err
	}
	agentSpec, agentVersion, pinned, digest := old.AgentSpec, old.AgentVersion, old.Policy, old.PolicyDigest
	if rec, err := s.Store.GetAgent(ctx, old.Project, old.Agent); err == nil && rec.Digest != old.AgentVersion {
		// The agent was applied again since (its failure fixed, perhaps):
		// the retry runs the agent as it is now, under a policy no looser
		// than the failed session's.
		var now spec.Agent
		if err := json.Unmarshal(rec.Spec, &now); err != nil {
			return old, fmt.Errorf("agent %q: stored spec unreadable: %w", old.Agent, err)
		}
		now.Defaults()
		newPol, err := s.effective(ctx, old.Project, &now, "")
		if err != nil {
			return old, err
		}
		oldPol, err := policy.Pinned(old.Policy)
		if err != nil {
			return old, err
		}
		pol := pin(policy.Stricter(oldPol, newPol))
		sp, agentSpec, agentVersion, pinned, digest = now, now.JSON(), rec.Digest, pol.json, pol.digest
	}
	kind, payload := session.KindStart, json.RawMessage(`{}`)
	if old.Input != "" {
		kind = session.KindStartWithMessage
		payload, _ = json.Marshal(session.MessagePayload{Message: old.Input})
	}
	remote, err := s.repoAgain(ctx, old, by)
	if err != nil {
		return session.Session{}, err
	}
	newID := uuid.NewString()
	gate, err := s.startGate(ctx, newID, old.Project, by, sp)
	if err != nil {
		return session.Session{}, err
	}
	x, created, err := s.Store.CreateSession(ctx, store.NewSession{
		ID: newID, Project: old.Project, SpendCapUSD: old.SpendCapUSD, DisplayTitle: old.DisplayTitle, AwaitStart: gate,
		Agent: spec.Record{Project: old.Project, Name: old.Agent, Spec: agentSpec, Digest: agentVersion, Concurrency: sp.Concurrency},
		Input: old.Input, Repo: old.Repo, Remote: remote, RetryOf: old.ID, CreatedBy: by, StartKind: kind, StartPayload: payload,
		IdempotencyKey: "retry:" + old.ID + "/" + string(by.Kind) + ":" + by.ID, Policy: pinned, PolicyDigest: digest, Interactive: old.Interactive, Approver: old.Approver,
	})
	if err != nil {
		return x, err
	}
	return s.started(ctx, x, created, gate, sp, kind)
}

// Send records a command (idempotently by key) and wakes the workflow.
func (s Sessions) Send(ctx context.Context, caller identity.Principal, sessionID string, req wire.SendRequest) (session.Command, error) {
	if _, err := s.Sessions().For(ctx, caller, sessionID, identity.Steer); err != nil {
		return session.Command{}, err
	}
	by := caller.Sender()
	if err := callerKey(req.IdempotencyKey, by); err != nil {
		return session.Command{}, err
	}
	return s.send(ctx, sessionID, req, by)
}

// send is Send with any key (the platform's own commands).
func (s *Service) send(ctx context.Context, sessionID string, req wire.SendRequest, by session.Sender) (session.Command, error) {
	if req.Kind.PlatformOnly() {
		return session.Command{}, fmt.Errorf("%w: %s commands are created by the platform, one per session", errdefs.ErrInvalid, req.Kind)
	}
	if err := session.ValidatePayload(req.Kind, req.Payload); err != nil {
		return session.Command{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	if err := session.Limit("idempotencyKey", req.IdempotencyKey, session.MaxShort); err != nil {
		return session.Command{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	if err := s.checkMessage(ctx, sessionID, by, &req); err != nil {
		return session.Command{}, err
	}
	if len(req.Payload) == 0 {
		req.Payload = json.RawMessage(`{}`)
	}
	id := uuid.NewString()
	key := req.IdempotencyKey
	if key == "" {
		key = id
	}
	if req.Kind == session.KindAnswer {
		s.answerMu.Lock()
		defer s.answerMu.Unlock()
		if err := s.checkAnswer(ctx, sessionID, key, req.Payload); err != nil {
			return session.Command{}, err
		}
	}
	c, created, err := s.Store.AppendCommand(ctx, store.NewCommand{ID: id, SessionID: sessionID, Kind: req.Kind, Payload: req.Payload, Sender: by, IdempotencyKey: key})
	if err == nil && !created && (c.Kind != req.Kind || !session.SameJSON(c.Payload, req.Payload)) {
		what := "payload"
		if c.Kind != req.Kind {
			what = "kind (" + string(c.Kind) + ")"
		}
		return session.Command{}, &errdefs.KeyConflictError{Key: key, SessionID: sessionID, Original: "command " + c.ID, What: what}
	}
	if err != nil || !c.Kind.Dispatched() || c.State != session.CommandPending {
		return c, err
	}
	n := workflows.Notice{CommandID: c.ID, Kind: c.Kind}
	if !created {
		// A retried send whose command is still pending: make up for a wake
		// that may have been lost, but abort nothing a second time.
		n.Kind = ""
	}
	return c, s.notify(ctx, sessionID, n)
}

// checkMessage refuses, when it is sent, a message's model that cannot be
// called, an effort its model (else its session's) does not take, or
// attachments that cannot be given to it; it binds the attachments to
// the session and fills in what the transcript shows of them.
func (s *Service) checkMessage(ctx context.Context, sessionID string, by session.Sender, req *wire.SendRequest) error {
	var p session.MessagePayload
	if req.Kind != session.KindMessage || json.Unmarshal(req.Payload, &p) != nil || (p.Model == "" && p.ReasoningEffort == "" && len(p.Attachments) == 0) {
		return nil
	}
	if _, _, err := s.Providers.Resolve(p.Model); p.Model != "" && err != nil {
		return fmt.Errorf("%w: payload.model: %w", errdefs.ErrInvalid, err)
	}
	x, err := s.Store.GetSession(ctx, sessionID)
	if err != nil {
		return err
	}
	var sp spec.Agent
	_ = json.Unmarshal(x.AgentSpec, &sp)
	model := cmp.Or(p.Model, sp.Model)
	if err := provider.CheckEffort(model, p.ReasoningEffort); err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	files, err := s.Attachments.Resolve(ctx, attachdesk.Message{Project: x.Project, Session: x.ID, By: by, Model: model, Refs: p.Attachments})
	if err != nil || len(p.Attachments) == 0 {
		return err
	}
	if p.Attachments, err = s.Attachments.Bind(ctx, x.ID, files); err != nil {
		return err
	}
	req.Payload, _ = json.Marshal(p)
	return nil
}

// checkAnswer refuses an answer that cannot be delivered: no question of
// that toolCallId (400), one already answered or no longer open (409), or
// a choice outside a question's options where it offers only options
// (400). A retry of the answer already recorded under key passes.
func (s *Service) checkAnswer(ctx context.Context, sessionID, key string, payload json.RawMessage) error {
	x, err := s.Store.GetSession(ctx, sessionID)
	if err != nil {
		return err
	}
	var p session.AnswerPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("%w: payload: %w", errdefs.ErrInvalid, err)
	}
	cmds, err := s.Store.ListCommands(ctx, sessionID)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if c.IdempotencyKey == key {
			return nil // a retry: the key decides
		}
	}
	qs, err := s.Store.EventsByKey(ctx, sessionID, "question/"+p.ToolCallID)
	if err != nil {
		return err
	}
	var q *session.Question
	for _, e := range qs {
		if e.Key == "question/"+p.ToolCallID {
			q = new(session.Question)
			if err := json.Unmarshal(e.Data, q); err != nil {
				return fmt.Errorf("question %s is unreadable: %w", p.ToolCallID, err)
			}
		}
	}
	if q == nil {
		return fmt.Errorf("%w: session %s has no question with toolCallId %q", errdefs.ErrInvalid, x.ID, clip.String(p.ToolCallID, 64))
	}
	if x.Status.Terminal() {
		return fmt.Errorf("session %s is %s: %w", x.ID, x.Status, errdefs.ErrConflict)
	}
	for _, c := range cmds {
		var other session.AnswerPayload
		if c.Kind == session.KindAnswer && c.State != session.CommandFailed && c.State != session.CommandCanceled &&
			json.Unmarshal(c.Payload, &other) == nil && other.ToolCallID == p.ToolCallID {
			return fmt.Errorf("question %s was already answered (command %s): %w", p.ToolCallID, c.ID, errdefs.ErrConflict)
		}
	}
	calls, err := s.Store.EventsByKey(ctx, sessionID, "call/"+p.ToolCallID+"/")
	if err != nil {
		return err
	}
	for _, e := range calls {
		var d session.ToolCallData
		if json.Unmarshal(e.Data, &d) == nil && d.State.Final() {
			return fmt.Errorf("question %s is no longer open (its call is %s): %w", p.ToolCallID, d.State, errdefs.ErrConflict)
		}
	}
	if err := q.Check(p.Answers); err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	return nil
}

// Archive marks a session done-for-now; it stays revivable. A session
// working on a turn is refused: archiving would hide it while it runs.
func (s Sessions) Archive(ctx context.Context, caller identity.Principal, sessionID string) (session.Session, error) {
	x, err := s.Sessions().For(ctx, caller, sessionID, identity.Steer)
	if err != nil {
		return x, err
	}
	by := caller.Sender()
	if x.Status == session.StatusRunning || x.Status == session.StatusQueued {
		return x, fmt.Errorf("session %s is %s; archive it once its turn ends (or interrupt it first): %w", sessionID, x.Status, errdefs.ErrConflict)
	}
	if err := s.Store.Archive(ctx, sessionID, by, ""); err != nil {
		return session.Session{}, err
	}
	return s.Store.GetSession(ctx, sessionID)
}

// notify signals the session's workflow, starting it if it is not running.
func (s *Service) notify(ctx context.Context, sessionID string, n workflows.Notice) error {
	// The command is recorded: waking its session does not depend on the
	// caller staying connected.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := s.Temporal.SignalWithStartWorkflow(ctx, session.WorkflowID(sessionID), workflows.SignalCommand, n, client.StartWorkflowOptions{
		ID:                    session.WorkflowID(sessionID),
		TaskQueue:             workflows.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflows.SessionWorkflow, workflows.Input{SessionID: sessionID})
	if err != nil {
		return fmt.Errorf("wake session %s: %w (the command is recorded and will run when the engine is reachable)", sessionID, err)
	}
	return nil
}

// sessionsIn lists every session in any of statuses (archived ones too
// when archived is set), paging through the whole set.
func sessionsIn(ctx context.Context, st store.Store, archived bool, statuses ...session.Status) ([]session.Session, error) {
	return store.AllSessions(ctx, st, session.Filter{Statuses: statuses, IncludeArchived: archived})
}

// started wakes a session just created, unless it waits at the door: a
// session acting as its project's service identity gets the project's
// credentials first.
func (s *Service) started(ctx context.Context, x session.Session, created bool, gate *session.Park, sp spec.Agent, kind session.CommandKind) (session.Session, error) {
	if waiting, err := s.awaitingStart(ctx, x.ID); err != nil || waiting {
		return x, err // nothing runs before the start is approved
	}
	if created && gate == nil && sp.Identity == spec.IdentityService && len(sp.Environment.Credentials) > 0 {
		if err := s.adoptServiceCredentials(ctx, x, sp); err != nil {
			_ = s.Store.FailSession(ctx, x.ID, err.Error())
			return x, err
		}
	}
	return x, s.notify(ctx, x.ID, workflows.Notice{CommandID: x.ID + "-start", Kind: kind})
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
