// Package wire declares the requests and responses of Paddock's HTTP API:
// what the server decodes and encodes, and what its clients send and
// read. It holds types only, so a client links nothing of the server.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// Whoami is the caller and their projects.
type Whoami struct {
	identity.Principal
	Projects []identity.Membership `json:"projects"`
}

// NewProject is the body of POST /v1/projects.
type NewProject struct {
	Name string `json:"name"`
}

// NewMember is the body of PUT /v1/projects/{name}/members/{user}.
type NewMember struct {
	Role identity.Role `json:"role"`
}

// NewUser is the body of POST /v1/users.
type NewUser struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
}

// Revoked is what a revocation did.
type Revoked struct {
	User     string   `json:"user,omitempty"`
	Stopped  []string `json:"stopped"`
	Problems []string `json:"problems,omitempty"`
}

// NewToken is the body of POST /v1/tokens; NewTokenResult is its answer,
// the only time the token's text is shown.
type NewToken struct {
	User  string `json:"user,omitempty"`
	Label string `json:"label,omitempty"`
	// Expires is the token's lifetime ("720h"; default 30 days).
	Expires string `json:"expires,omitempty"`
}

// NewTokenResult carries a new token's text, shown once.
type NewTokenResult struct {
	identity.Token
	Secret string `json:"token"`
}

// OIDCLogin is the body of POST /v1/login/oidc: an ID token the directory
// issued to Paddock's client.
type OIDCLogin struct {
	IDToken string `json:"idToken"`
	// AccessToken, of the same login, lets the server read the user's
	// name at the directory's userinfo endpoint when the ID token lacks it.
	AccessToken string `json:"accessToken,omitempty"`
	// Nonce is the one the login asked the directory to put in the ID
	// token; the server checks it is there.
	Nonce string `json:"nonce,omitempty"`
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// SessionID names the live session holding a singleton slot, or the
	// session of the original request whose idempotency key was reused (409).
	SessionID string `json:"sessionId,omitempty"`
}

// Decision is the body of approve and reject.
type Decision struct {
	Note string `json:"note,omitempty"`
}

// DiffResponse is a session's deliverable.
type DiffResponse struct {
	session.Diff
	Repo     string `json:"repo,omitempty"`
	Delivery string `json:"delivery,omitempty"`
}

// DiskResponse is what a session's working copy and caches use on disk,
// and its disk budget (0: not bounded).
type DiskResponse struct {
	Used   int64 `json:"usedBytes"`
	Budget int64 `json:"budgetBytes"`
}

// Retention is a project's audit content retention, as sent and shown.
type Retention struct {
	// Content is how long content is kept ("720h"; "0s": not kept).
	Content string `json:"content"`
}

// StartDecision is the body of POST /v1/sessions/{id}/start.
type StartDecision struct {
	Approve bool   `json:"approve"`
	Note    string `json:"note,omitempty"`
}

// Credentials is the body of POST /v1/sessions/{id}/credentials: the
// values of the credentials the session's agent declares, by name.
type Credentials struct {
	Values map[string]string `json:"values"`
}

// IdentityChoice is the body of POST /v1/sessions/{id}/identity.
type IdentityChoice struct {
	As string `json:"as"`
}

// OIDCConfig tells a client how to log in through the organization's
// directory (OpenID Connect): the issuer, Paddock's client there (a public
// client: the CLI uses the authorization code flow with PKCE and a loopback
// redirect) and the scopes to ask for. An empty Issuer: not configured.
type OIDCConfig struct {
	Issuer   string   `json:"issuer,omitempty"`
	ClientID string   `json:"clientId,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// ExtendRequest grants a parked session what its budget needs: one more
// extension (+50 actions, +15 minutes by default), or, with SpendCapUSD,
// a higher spend cap.
type ExtendRequest struct {
	Note        string  `json:"note,omitempty"`
	SpendCapUSD float64 `json:"spendCapUsd,omitempty"`
}

// Parked is a session waiting on a person or a condition, and what it
// needs.
type Parked struct {
	Session session.Session `json:"session"`
	Reason  string          `json:"reason"`
	Needs   string          `json:"needs"`
	Detail  string          `json:"detail,omitempty"`
}

// Collected is one working copy the collector removed, and why.
type Collected struct {
	SessionID string `json:"sessionId"`
	// Mirror, instead, is a remote repository's mirror collected
	// (PROJECT/CONNECTION/PATH).
	Mirror string `json:"mirror,omitempty"`
	Reason string `json:"reason"`
	Bytes  int64  `json:"bytes"`
}

// Status is a node's and its cluster's health at a glance: what the
// deployment holds (from the store), and this node's own figures.
type Status struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	// Nodes hold the database now (1 for a lone node).
	Nodes int `json:"nodes"`
	// Sessions not archived, by status; Parked, by park reason.
	Sessions         map[session.Status]int `json:"sessions"`
	Parked           map[string]int         `json:"parked"`
	ApprovalsWaiting int                    `json:"approvalsWaiting"`
	// OldestApprovalSeconds is how long the oldest of them has waited.
	OldestApprovalSeconds int64 `json:"oldestApprovalSeconds,omitempty"`
	// QueueLagMs is how long tasks waited in this node's Temporal task
	// queues, at the 99th percentile since it started (-1: no task yet).
	QueueLagMs int64 `json:"queueLagMs"`
	// Disk is the data directory's filesystem.
	Disk Disk `json:"disk"`
}

// Disk is a filesystem's use.
type Disk struct {
	Path       string `json:"path"`
	UsedBytes  int64  `json:"usedBytes"`
	FreeBytes  int64  `json:"freeBytes"`
	TotalBytes int64  `json:"totalBytes"`
}

// AuditReport is one session's audit log verified.
type AuditReport struct {
	SessionID string `json:"sessionId"`
	Entries   int    `json:"entries"`
	OK        bool   `json:"ok"`
	// Sealed says the log was sealed (and the seal verified, when OK).
	Sealed bool `json:"sealed"`
	// BrokenAt is the first entry that does not hold (0 with OK: none; 0
	// without: the seal), and Problem why.
	BrokenAt int64  `json:"brokenAt,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// AuditEntry is an entry as shown, with its retained content when asked
// for and kept: decrypted and checked against the entry's digest.
type AuditEntry struct {
	audit.Entry
	Content json.RawMessage `json:"content,omitempty"`
	// ContentProblem says why retained content could not be shown.
	ContentProblem string `json:"contentProblem,omitempty"`
}

// Applied is the outcome of applying one agent.
type Applied struct {
	Project string           `json:"project"`
	Name    string           `json:"name"`
	Result  spec.ApplyResult `json:"result"`
}

// CreateRequest asks for a new session.
type CreateRequest struct {
	// ReasoningEffort is how much the model reasons on the first turn
	// (one of the levels its model takes; "": the agent's).
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	Project         string `json:"project,omitempty"`
	// Agent names an applied agent. Empty runs an ad-hoc agent on Model.
	Agent string `json:"agent,omitempty"`
	// Model overrides the agent's model for this session (PROVIDER/MODEL).
	Model   string `json:"model,omitempty"`
	Message string `json:"message,omitempty"`
	// Attachments are files uploaded to the project, given with the
	// first message (by ID).
	Attachments []session.AttachmentRef `json:"attachments,omitempty"`
	// Repo is the repository the session works on: an absolute path on
	// the server, or a remote repository a connection of the project
	// grants (https://FORGE/OWNER/NAME, or OWNER/NAME).
	Repo string `json:"repo,omitempty"`
	// Ref, for a remote repository, is where its copy starts: a branch, a
	// tag, a full commit ID or a pull request (#N); its default branch
	// when empty.
	Ref string `json:"ref,omitempty"`
	// IdempotencyKey makes creation idempotent.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Policy (YAML) tightens the project's and agent's policy for this session.
	Policy string `json:"policy,omitempty"`
	// NonInteractive sessions reject calls that need permission at once,
	// unless Approver names who will decide them.
	NonInteractive bool   `json:"nonInteractive,omitempty"`
	Approver       string `json:"approver,omitempty"`
}

// Length limits of a request's paths and policies, in bytes.
const (
	MaxPath   = 4096
	MaxPolicy = 64 << 10
)

// Check says what is wrong with a request's names and lengths.
func (req CreateRequest) Check() error {
	if err := identity.CheckName(identity.ProjectName, req.Project); err != nil {
		return err
	}
	if req.Agent != "" {
		if err := identity.CheckName(identity.AgentName, req.Agent); err != nil {
			return err
		}
	}
	err := errors.Join(session.Limit("model", req.Model, session.MaxShort), session.Limit("message", req.Message, session.MaxMessage),
		session.Limit("repo", req.Repo, MaxPath), session.Limit("ref", req.Ref, session.MaxShort), session.Limit("idempotencyKey", req.IdempotencyKey, session.MaxShort),
		session.Limit("policy", req.Policy, MaxPolicy), session.Limit("approver", req.Approver, session.MaxShort))
	if err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	return nil
}

// ConnectionRequest adds a connection to a project's forge; Credential
// (a token or password) is sealed and never shown again.
type ConnectionRequest struct {
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	URL          string   `json:"url"`
	Repositories []string `json:"repositories"`
	Username     string   `json:"username,omitempty"`
	Credential   string   `json:"credential"`
}

// LinkRequest links the caller's own account on a connection's forge:
// Credential is their token there.
type LinkRequest struct {
	Credential string `json:"credential"`
}

// SendRequest is a command from a caller.
type SendRequest struct {
	Kind           session.CommandKind `json:"kind"`
	Payload        json.RawMessage     `json:"payload,omitempty"`
	IdempotencyKey string              `json:"idempotencyKey,omitempty"`
}

// AcceptRequest records that the diff was applied to the user's
// repository: the diff is named by the base and tree it was taken from.
type AcceptRequest struct {
	Mode   session.ApplyMode `json:"mode"`
	Commit string            `json:"commit,omitempty"`
	Base   string            `json:"base"`
	Tree   string            `json:"tree"`
}

// TriggerResult says where a delivery went.
type TriggerResult struct {
	// Routed is "spawn", "session", "bound" (into the sessions bound to
	// the delivery's pull request: Sessions, Commands; none bound: none),
	// "ignored" (an event kind the trigger does not accept) or
	// "released" (a trigger with release: true; Released bindings were).
	Routed    string   `json:"routed"`
	SessionID string   `json:"sessionId,omitempty"`
	CommandID string   `json:"commandId,omitempty"`
	Sessions  []string `json:"sessions,omitempty"`
	Commands  []string `json:"commands,omitempty"`
	Released  int      `json:"released,omitempty"`
	// Error is why a delivery was refused (recorded, never answered).
	Error string `json:"error,omitempty"`
}

// SlackAppRequest configures a project's Slack app: its workspace, the
// channels mapped to agents, and its credentials (the bot token, the
// signing secret, and for Socket Mode an app-level token), sealed and
// never shown again.
type SlackAppRequest struct {
	Team          string         `json:"team"`
	Channels      []chat.Channel `json:"channels"`
	BotToken      string         `json:"botToken"`
	SigningSecret string         `json:"signingSecret"`
	AppToken      string         `json:"appToken,omitempty"`
}

// SlackLinkRequest confirms, as the caller, the one-time code the Slack
// app gave a Slack user: that Slack user acts as the caller from then on.
type SlackLinkRequest struct {
	Code string `json:"code"`
}
