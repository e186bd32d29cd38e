package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// ErrInvalid marks bad input from a caller (mapped to 400).
var ErrInvalid = store.ErrInvalid

// Service is what the API offers: it records rows first, then wakes the
// session's workflow.
type Service struct {
	Store     store.Store
	Temporal  client.Client
	Providers *provider.Registry
	Tools     tool.Set
}

// Known returns the name checks specs are validated with.
func (s *Service) Known() spec.Known {
	return spec.Known{Tool: func(n string) bool { _, ok := s.Tools[n]; return ok }, Provider: s.Providers.Has}
}

// Applied is the outcome of applying one agent.
type Applied struct {
	Project string            `json:"project"`
	Name    string            `json:"name"`
	Result  store.ApplyResult `json:"result"`
}

// ApplyAgents parses and validates every spec in the YAML, then applies all
// of them in one transaction: nothing is half-applied.
func (s *Service) ApplyAgents(ctx context.Context, yamlText []byte) ([]Applied, error) {
	agents, err := spec.Parse(bytes.NewReader(yamlText), s.Known())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	recs := make([]store.Agent, len(agents))
	for i, a := range agents {
		recs[i] = store.Agent{Project: a.Project, Name: a.Name, Spec: a.JSON(), Digest: a.Digest(), Concurrency: a.Concurrency}
	}
	res, err := s.Store.ApplyAgents(ctx, recs)
	if err != nil {
		return nil, err
	}
	out := make([]Applied, len(res))
	for i, r := range res {
		out[i] = Applied{Project: agents[i].Project, Name: agents[i].Name, Result: r}
	}
	return out, nil
}

// CreateRequest asks for a new session.
type CreateRequest struct {
	Project string `json:"project,omitempty"`
	// Agent names an applied agent. Empty runs an ad-hoc agent on Model.
	Agent string `json:"agent,omitempty"`
	// Model overrides the agent's model for this session (PROVIDER/MODEL).
	Model   string `json:"model,omitempty"`
	Message string `json:"message,omitempty"`
	Repo    string `json:"repo,omitempty"`
	// IdempotencyKey makes creation idempotent.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Policy (YAML) tightens the project's and agent's policy for this session.
	Policy string `json:"policy,omitempty"`
	// NonInteractive sessions reject calls that need permission at once,
	// unless Approver names who will decide them.
	NonInteractive bool   `json:"nonInteractive,omitempty"`
	Approver       string `json:"approver,omitempty"`
}

// DefaultModel runs ad-hoc sessions when no model is named.
const DefaultModel = "replay/demo"

// CreateSession snapshots the agent onto a new session with its start
// command, in one transaction, then starts its workflow.
func (s *Service) CreateSession(ctx context.Context, req CreateRequest, by session.Sender) (session.Session, error) {
	if req.Project == "" {
		req.Project = spec.DefaultProject
	}
	var sp spec.Agent
	if req.Agent == "" {
		sp = spec.Agent{Name: "adhoc", Project: req.Project, Model: DefaultModel}
	} else {
		rec, err := s.Store.GetAgent(ctx, req.Project, req.Agent)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return session.Session{}, fmt.Errorf("agent %q is not applied in project %q; apply it with `paddock apply -f AGENT.yaml`: %w", req.Agent, req.Project, store.ErrNotFound)
			}
			return session.Session{}, err
		}
		if err := json.Unmarshal(rec.Spec, &sp); err != nil {
			return session.Session{}, fmt.Errorf("agent %q: stored spec unreadable: %w", req.Agent, err)
		}
	}
	if req.Model != "" {
		sp.Model = req.Model
	}
	sp.Defaults()
	if err := sp.Validate(s.Known()); err != nil {
		return session.Session{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if _, _, err := s.Providers.Resolve(sp.Model); err != nil {
		return session.Session{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	pol, err := s.effectivePolicy(ctx, req.Project, &sp, req.Policy)
	if err != nil {
		return session.Session{}, err
	}
	input := req.Message
	if input == "" {
		input = sp.InitialPrompt
	}
	kind, payload := session.KindStart, json.RawMessage(`{}`)
	if strings.TrimSpace(input) != "" {
		kind = session.KindStartWithMessage
		payload, _ = json.Marshal(session.MessagePayload{Message: input})
	}
	x, _, err := s.Store.CreateSession(ctx, store.NewSession{
		ID: uuid.NewString(), Project: req.Project, SpendCapUSD: sp.MaxPerSessionUSD, DisplayTitle: sp.Title(input),
		Agent: store.Agent{Project: sp.Project, Name: sp.Name, Spec: sp.JSON(), Digest: sp.Digest(), Concurrency: sp.Concurrency},
		Input: input, Repo: req.Repo, CreatedBy: by, StartKind: kind, StartPayload: payload, IdempotencyKey: req.IdempotencyKey,
		Policy: pol.json, PolicyDigest: pol.digest, Interactive: !req.NonInteractive, Approver: req.Approver,
	})
	if err != nil {
		return x, err
	}
	return x, s.notify(ctx, x.ID, Notice{CommandID: x.ID + "-start", Kind: kind})
}

type pinnedPolicy struct {
	json   json.RawMessage
	digest string
}

// ProjectPolicy returns a project's policy, or the default policy.
func (s *Service) ProjectPolicy(ctx context.Context, project string) (*policy.Policy, error) {
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

// SetProjectPolicy validates a policy written in YAML and makes it the
// project's; future sessions pin it, running ones keep theirs.
func (s *Service) SetProjectPolicy(ctx context.Context, project string, yamlText []byte) (*policy.Policy, error) {
	p, err := policy.Parse(yamlText)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	raw, _ := json.Marshal(p)
	return p, s.Store.SetProjectPolicy(ctx, project, raw)
}

// effectivePolicy is the project's policy tightened by the agent's and the
// request's: the policy a session pins.
func (s *Service) effectivePolicy(ctx context.Context, project string, sp *spec.Agent, requested string) (pinnedPolicy, error) {
	p, err := s.ProjectPolicy(ctx, project)
	if err != nil {
		return pinnedPolicy{}, err
	}
	agentPolicy, err := sp.PolicyValue()
	if err != nil {
		return pinnedPolicy{}, fmt.Errorf("%w: agent %s: %w", ErrInvalid, sp.Name, err)
	}
	p = policy.Stricter(p, agentPolicy)
	if requested != "" {
		rp, err := policy.Parse([]byte(requested))
		if err != nil {
			return pinnedPolicy{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		p = policy.Stricter(p, rp)
	}
	raw, _ := json.Marshal(p)
	return pinnedPolicy{json: raw, digest: p.Digest()}, nil
}

// DecideApproval approves or rejects a pending approval as by, then wakes
// the session. When the session names an approver, only they may decide.
func (s *Service) DecideApproval(ctx context.Context, id string, approve bool, note string, by session.Sender) (session.Approval, error) {
	ap, err := s.Store.GetApproval(ctx, id)
	if err != nil {
		return ap, err
	}
	x, err := s.Store.GetSession(ctx, ap.SessionID)
	if err != nil {
		return ap, err
	}
	if x.Approver != "" && x.Approver != by.ID {
		return ap, fmt.Errorf("session %s names %s as its approver, not %s: %w", x.ID, x.Approver, by.ID, store.ErrDenied)
	}
	status := session.ApprovalRejected
	if approve {
		status = session.ApprovalApproved
	}
	ap, err = s.Store.DecideApproval(ctx, id, status, &by, note)
	if err != nil {
		return ap, err
	}
	_, err = s.Temporal.SignalWithStartWorkflow(ctx, session.WorkflowID(ap.SessionID), SignalApproval, ap.ID, client.StartWorkflowOptions{
		ID: session.WorkflowID(ap.SessionID), TaskQueue: TaskQueue, WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, SessionWorkflow, Input{SessionID: ap.SessionID, Provisioned: true})
	if err != nil {
		return ap, fmt.Errorf("approval %s recorded, but waking session %s failed: %w", id, ap.SessionID, err)
	}
	return ap, nil
}

// SpawnSuccessor creates the replacement of a replace: auto agent's ended
// session, on the agent's latest spec, with the predecessor's handoff
// attached to its kickoff. It is idempotent per predecessor.
func (s *Service) SpawnSuccessor(ctx context.Context, old session.Session) (session.Session, error) {
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
	x, _, err := s.Store.CreateSession(ctx, store.NewSession{
		Policy: pol.json, PolicyDigest: pol.digest, Interactive: old.Interactive, Approver: old.Approver,
		ID: uuid.NewString(), Project: old.Project, SpendCapUSD: sp.MaxPerSessionUSD, DisplayTitle: sp.Title(msg),
		Agent: store.Agent{Project: sp.Project, Name: sp.Name, Spec: sp.JSON(), Digest: sp.Digest(), Concurrency: sp.Concurrency},
		Input: msg, Repo: old.Repo, CreatedBy: session.Sender{Kind: session.SenderSystem, ID: "replacement-of-" + old.ID},
		StartKind: session.KindStartWithMessage, StartPayload: payload, IdempotencyKey: "successor:" + old.ID,
	})
	if err != nil {
		return x, err
	}
	return x, s.notify(ctx, x.ID, Notice{CommandID: x.ID + "-start", Kind: session.KindStartWithMessage})
}

// Retry creates a fresh session for a failed session's input, idempotently.
func (s *Service) Retry(ctx context.Context, id string, by session.Sender) (session.Session, error) {
	old, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return old, err
	}
	if old.Status != session.StatusFailed {
		return old, fmt.Errorf("session %s is %s; only a failed session can be retried: %w", id, old.Status, store.ErrConflict)
	}
	var sp spec.Agent
	if err := json.Unmarshal(old.AgentSpec, &sp); err != nil {
		return old, err
	}
	kind, payload := session.KindStart, json.RawMessage(`{}`)
	if old.Input != "" {
		kind = session.KindStartWithMessage
		payload, _ = json.Marshal(session.MessagePayload{Message: old.Input})
	}
	x, _, err := s.Store.CreateSession(ctx, store.NewSession{
		ID: uuid.NewString(), Project: old.Project, SpendCapUSD: old.SpendCapUSD, DisplayTitle: old.DisplayTitle,
		Agent: store.Agent{Project: old.Project, Name: old.Agent, Spec: old.AgentSpec, Digest: old.AgentVersion, Concurrency: sp.Concurrency},
		Input: old.Input, Repo: old.Repo, RetryOf: old.ID, CreatedBy: by, StartKind: kind, StartPayload: payload,
		IdempotencyKey: "retry:" + old.ID, Policy: old.Policy, PolicyDigest: old.PolicyDigest, Interactive: old.Interactive, Approver: old.Approver,
	})
	if err != nil {
		return x, err
	}
	return x, s.notify(ctx, x.ID, Notice{CommandID: x.ID + "-start", Kind: kind})
}

// SendRequest is a command from a caller.
type SendRequest struct {
	Kind           session.CommandKind `json:"kind"`
	Payload        json.RawMessage     `json:"payload,omitempty"`
	IdempotencyKey string              `json:"idempotencyKey,omitempty"`
}

// Send records a command (idempotently by key) and wakes the workflow.
func (s *Service) Send(ctx context.Context, sessionID string, req SendRequest, by session.Sender) (session.Command, error) {
	if req.Kind.PlatformOnly() {
		return session.Command{}, fmt.Errorf("%w: %s commands are created by the platform, one per session", ErrInvalid, req.Kind)
	}
	if err := session.ValidatePayload(req.Kind, req.Payload); err != nil {
		return session.Command{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(req.Payload) == 0 {
		req.Payload = json.RawMessage(`{}`)
	}
	id := uuid.NewString()
	key := req.IdempotencyKey
	if key == "" {
		key = id
	}
	c, created, err := s.Store.AppendCommand(ctx, store.NewCommand{ID: id, SessionID: sessionID, Kind: req.Kind, Payload: req.Payload, Sender: by, IdempotencyKey: key})
	if err != nil || !c.Kind.Dispatched() || c.State != session.CommandPending {
		return c, err
	}
	n := Notice{CommandID: c.ID, Kind: c.Kind}
	if !created {
		// A retried send whose command is still pending: make up for a wake
		// that may have been lost, but abort nothing a second time.
		n.Kind = ""
	}
	return c, s.notify(ctx, sessionID, n)
}

// Archive marks a session done-for-now; it stays revivable.
func (s *Service) Archive(ctx context.Context, sessionID string, by session.Sender) (session.Session, error) {
	if err := s.Store.Archive(ctx, sessionID, by, ""); err != nil {
		return session.Session{}, err
	}
	return s.Store.GetSession(ctx, sessionID)
}

// notify signals the session's workflow, starting it if it is not running.
func (s *Service) notify(ctx context.Context, sessionID string, n Notice) error {
	_, err := s.Temporal.SignalWithStartWorkflow(ctx, session.WorkflowID(sessionID), SignalCommand, n, client.StartWorkflowOptions{
		ID:                    session.WorkflowID(sessionID),
		TaskQueue:             TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, SessionWorkflow, Input{SessionID: sessionID})
	if err != nil {
		return fmt.Errorf("wake session %s: %w (the command is recorded and will run when the engine is reachable)", sessionID, err)
	}
	return nil
}

// Recover wakes the workflow of every resumable session, so work recorded
// while the engine was unreachable is picked up.
func (s *Service) Recover(ctx context.Context) error {
	for _, st := range []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting} {
		list, err := s.Store.ListSessions(ctx, store.SessionFilter{Status: st, IncludeArchived: true})
		if err != nil {
			return err
		}
		for _, x := range list {
			if err := s.notify(ctx, x.ID, Notice{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Diff is the session's deliverable: its working copy against the base.
func (s *Service) Diff(ctx context.Context, id string) (workspace.Diff, session.Session, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return workspace.Diff{}, x, err
	}
	if x.Workdir == "" || x.BaseCommit == "" {
		return workspace.Diff{}, x, fmt.Errorf("session %s has no working copy yet (status %s): %w", id, x.Status, store.ErrConflict)
	}
	if _, err := os.Stat(x.Workdir); err != nil {
		return workspace.Diff{}, x, fmt.Errorf("session %s's working copy is gone: %w", id, store.ErrConflict)
	}
	d, err := workspace.Compute(ctx, x.Workdir, x.BaseCommit)
	return d, x, err
}

// AcceptRequest records that the diff was applied to the user's repository.
type AcceptRequest struct {
	Mode   workspace.ApplyMode `json:"mode"`
	Commit string              `json:"commit,omitempty"`
}

// Accept records the acceptance of a session's diff (the CLI applied it
// to the user's repository with the user's own git identity).
func (s *Service) Accept(ctx context.Context, id string, req AcceptRequest, by session.Sender) (session.Session, error) {
	if req.Mode != workspace.AsCommit && req.Mode != workspace.AsUncommitted {
		return session.Session{}, fmt.Errorf("%w: mode %q: want commit or uncommitted", ErrInvalid, req.Mode)
	}
	note := string(req.Mode)
	if req.Commit != "" {
		note += " " + req.Commit
	}
	if err := s.Store.SetDelivery(ctx, id, "accepted", by, note); err != nil {
		return session.Session{}, err
	}
	return s.Store.GetSession(ctx, id)
}

// Reject discards the session's changes: the working copy returns to its
// base, and nothing reaches the user's repository.
func (s *Service) Reject(ctx context.Context, id string, by session.Sender) (session.Session, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return x, err
	}
	if x.Delivery != "" {
		return x, fmt.Errorf("session %s's diff was already %s: %w", id, x.Delivery, store.ErrConflict)
	}
	if x.Workdir != "" && x.BaseCommit != "" {
		if err := workspace.Discard(ctx, x.Workdir, x.BaseCommit); err != nil {
			return x, err
		}
	}
	if err := s.Store.SetDelivery(ctx, id, "rejected", by, "changes discarded"); err != nil {
		return x, err
	}
	return s.Store.GetSession(ctx, id)
}
