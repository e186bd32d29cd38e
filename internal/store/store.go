// Package store declares the record Paddock keeps of projects, agents,
// sessions, commands, turns and transcript events. Backends live in
// subpackages (sqlite) and all pass the shared suite in storetest.
//
// The store is the one deliberately wide interface: it is the system of
// record, and every method that changes more than one row does it in one
// transaction.
package store

import (
	"context"
	"encoding/json"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// NewSession is what creation needs. The agent spec is snapshotted from
// Agent.
type NewSession struct {
	ID           string
	Project      string
	Agent        spec.Record
	SpendCapUSD  float64
	DisplayTitle string
	Input        string
	Repo         string
	// Remote is the remote repository of a session on one (nil: none).
	Remote    *session.Remote
	RetryOf   string
	CreatedBy session.Sender
	// Policy is the effective policy pinned on the session.
	Policy       json.RawMessage
	PolicyDigest string
	Interactive  bool
	Approver     string
	// Start is the one start command: kind start or startWithMessage.
	StartKind    session.CommandKind
	StartPayload json.RawMessage
	// AwaitStart, when set, parks the session at the door: the start
	// command is held, the park's recovery, until someone resolves it.
	AwaitStart *session.Park
	// IdempotencyKey makes creation idempotent; empty means always create.
	IdempotencyKey string
}

// NewCommand is a command to record.
type NewCommand struct {
	ID             string
	SessionID      string
	Kind           session.CommandKind
	Payload        json.RawMessage
	Sender         session.Sender
	IdempotencyKey string
	// Held records the command held (a trigger delivery waiting in its
	// lane), not pending.
	Held bool
}

// Census counts what the whole deployment holds now, for operators: the
// sessions not archived by status, the open parks by reason, the
// approvals pending (and the oldest's age), and the nodes holding the
// database (1 for a lone node on SQLite).
type Census struct {
	Sessions  map[session.Status]int
	Parked    map[string]int
	Approvals int
	// OldestApproval is when the oldest approval pending was asked (zero:
	// none pending).
	OldestApproval time.Time
	Nodes          int
}

// AuditLeaf is one leaf of the audit tree as stored: the entry's session,
// seq and stored JSON (the leaf's data).
type AuditLeaf struct {
	Leaf    int64
	Session string
	Seq     int64
	Data    string
}

// AllSessions lists every session f matches, newest first, paging
// through the whole set however large: what whole-set work (recovery,
// revocation, sweeps, collection, verification) must use instead of one
// ListSessions page. f.Limit sets the page size.
func AllSessions(ctx context.Context, st interface {
	ListSessions(context.Context, session.Filter) ([]session.Session, error)
}, f session.Filter) ([]session.Session, error) {
	if f.Limit <= 0 || f.Limit > session.MaxPage {
		f.Limit = session.MaxPage
	}
	var out []session.Session
	for {
		page, err := st.ListSessions(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < f.Limit {
			return out, nil
		}
		f.Before = page[len(page)-1].ID
	}
}

// Started are the sessions of x's project that x's agent started (it
// delegated them or spawned them), newest first, whatever their status.
func Started(ctx context.Context, st interface {
	ListSessions(context.Context, session.Filter) ([]session.Session, error)
}, x session.Session) ([]session.Session, error) {
	all, err := AllSessions(ctx, st, session.Filter{Project: x.Project, IncludeArchived: true})
	var out []session.Session
	for _, y := range all {
		if y.StartedBy() == x.ID {
			out = append(out, y)
		}
	}
	return out, err
}

// Store is the system of record: every role below, in one database.
// Code that needs only some of it declares the roles it uses.
type Store interface {
	Close() error
	Agents
	Approvals
	Sessions
	Commands
	Turns
	Parks
	Connections
	Chats
	ForgeLinks
	Attachments
	Identity
	Audit
	History
	Events
}

// Agents are the projects' agents and policies.
type Agents interface {
	EnsureProject(ctx context.Context, name string) error
	// SetProjectPolicy stores a project's policy (JSON); GetProjectPolicy
	// returns it, or nil when the project has none.
	SetProjectPolicy(ctx context.Context, project string, policy json.RawMessage) error
	GetProjectPolicy(ctx context.Context, project string) (json.RawMessage, error)
	// ApplyAgents upserts agents in one transaction: all or nothing.
	ApplyAgents(ctx context.Context, agents []spec.Record) ([]spec.ApplyResult, error)
	GetAgent(ctx context.Context, project, name string) (spec.Record, error)
	// ListAgents lists a project's agents (every project's for "").
	ListAgents(ctx context.Context, project string) ([]spec.Record, error)
}

// Approvals are tool calls waiting on a person's decision.
type Approvals interface {
	// CreateApproval records a pending approval idempotently by ID.
	CreateApproval(ctx context.Context, a session.Approval) (session.Approval, error)
	GetApproval(ctx context.Context, id string) (session.Approval, error)
	ListApprovals(ctx context.Context, f session.ApprovalFilter) ([]session.Approval, error)
	// DecideApproval settles a pending approval (approved, rejected or
	// expired). Deciding one already settled, or lapsed, is errdefs.ErrConflict.
	DecideApproval(ctx context.Context, id string, status session.ApprovalStatus, by *session.Sender, note string) (session.Approval, error)
}

// Sessions are the sessions' rows and every change of their status.
type Sessions interface {
	// CreateSession records, in one transaction, the session (queued), its
	// spec snapshot and spend cap, the singleton slot of a concurrency-1
	// agent, and the start command. With an idempotency key already used it
	// returns the existing session and created=false.
	CreateSession(ctx context.Context, in NewSession) (s session.Session, created bool, err error)
	GetSession(ctx context.Context, id string) (session.Session, error)
	ListSessions(ctx context.Context, f session.Filter) ([]session.Session, error)
	SetRuntimePhase(ctx context.Context, id string, phase session.RuntimePhase) error
	// SetWorkspace records where the session's working copy is: on which
	// node ("" for a lone node), in which directory, at which base.
	SetWorkspace(ctx context.Context, id, node, workdir, baseCommit string) error
	SetDisplay(ctx context.Context, id, title, ambient string) error
	// MarkStarted moves a queued session whose bare start booted the
	// runtime to awaiting.
	MarkStarted(ctx context.Context, id string) error
	// SetHold holds a session (h) or releases it (nil); holding a held
	// one, or releasing one not held, is errdefs.ErrConflict.
	SetHold(ctx context.Context, id string, h *session.Hold) error
	// Repair moves a queued or running session that has no active work
	// (no pending or dispatching command, no turn accepted or in
	// progress) to awaiting, in one transaction; it reports whether it
	// did.
	Repair(ctx context.Context, id string) (bool, error)
	// FailSession ends a session as failed (provisioning or session-scoped
	// failure) unless it already ended; it releases the singleton slot.
	FailSession(ctx context.Context, id, errMsg string) error
	// StopSession ends a session as stopped; a stop always wins over any
	// status but a previous terminal one. It releases the singleton slot.
	StopSession(ctx context.Context, id string, p session.StopPayload) error
	// Deliver records what became of the session's diff taken against
	// base, and by whom: "accepted" moves the working copy's base to next
	// (the accepted snapshot, so later changes make a new diff), "rejected"
	// keeps it (next == base). A delivery against a base that is no longer
	// the session's (another delivery came first) is errdefs.ErrConflict.
	Deliver(ctx context.Context, id, base, next, delivery string, by session.Sender, note string) error
	// Archive sets archivedAt (a work-bringing command clears it) and, when
	// handoff is not empty, persists the handoff note. It releases the
	// session's bindings; while one is held, only a person may archive it
	// (anyone else: *session.HeldError, nothing changed).
	Archive(ctx context.Context, id string, by session.Sender, handoff string) error
	// RaiseSpendCap sets a live session's spend cap.
	RaiseSpendCap(ctx context.Context, id string, usd float64) error
	// Census counts sessions, parks, pending approvals and nodes.
	Census(ctx context.Context) (Census, error)
}

// Commands are the messages sent to sessions, their batches, and the
// trigger deliveries held in their lane.
type Commands interface {
	// AppendCommand records a command idempotently by key. It refuses
	// commands to terminal sessions, and clears archivedAt of an archived
	// resumable session for a work-bringing command, in one transaction.
	AppendCommand(ctx context.Context, c NewCommand) (cmd session.Command, created bool, err error)
	GetCommand(ctx context.Context, id string) (session.Command, error)
	ListCommands(ctx context.Context, sessionID string) ([]session.Command, error)
	// Unfinished lists the live sessions (queued, running, awaiting)
	// holding a command pending, dispatching or held (a trigger's
	// delivery): those whose workflow may not know of it, as a crash
	// between recording and waking leaves them.
	Unfinished(ctx context.Context) ([]string, error)
	// ClaimBatch returns the commands already dispatching (a claim that a
	// crash interrupted), else those of a turn still open (one a crash
	// kept its workflow from recording: its turn is resumed), or else
	// claims the next batch (session.NextBatch)
	// and marks it dispatching. A pending stop wins: every other pending
	// command is canceled in the same transaction and the stop is claimed
	// alone.
	ClaimBatch(ctx context.Context, sessionID string) ([]session.Command, error)
	// SettleCommands moves dispatching commands to a final state.
	SettleCommands(ctx context.Context, ids []string, state session.CommandState, errMsg string) error
	// RecordDelivery keeps what trigger (PROJECT/NAME) made of the
	// delivery key (the first record stands); Delivery returns it
	// (errdefs.ErrNotFound: never delivered), so a replay gets the same answer and
	// does nothing new.
	RecordDelivery(ctx context.Context, trigger, key string, result json.RawMessage) error
	Delivery(ctx context.Context, trigger, key string) (json.RawMessage, error)
	// HeldDeliveries lists a session's trigger deliveries held in their
	// lane (held commands sent by triggers), oldest first.
	HeldDeliveries(ctx context.Context, sessionID string) ([]session.Command, error)
	// AbsorbDeliveries records, in one transaction, into (pending) and the
	// held deliveries ids as accepted, absorbed into it. Idempotent by
	// into's key: a flush retried after a crash adds nothing.
	AbsorbDeliveries(ctx context.Context, ids []string, into NewCommand) (session.Command, error)
}

// Turns are the sessions' turns and the model usage they recorded.
type Turns interface {
	// OpenTurn records (idempotently by id) a turn for the given commands,
	// marks them accepted, and sets the session running.
	OpenTurn(ctx context.Context, turnID, sessionID string, commandIDs []string) (session.Turn, error)
	// SetTurnStatus moves a turn and derives the session status from it.
	SetTurnStatus(ctx context.Context, turnID string, status session.TurnStatus, scope session.FailureScope, errMsg string) error
	GetTurn(ctx context.Context, id string) (session.Turn, error)
	ListTurns(ctx context.Context, sessionID string) ([]session.Turn, error)
	// RecordUsage records one model step's usage, once per (turn, step).
	RecordUsage(ctx context.Context, sessionID, turnID string, step int, model string, u session.Usage) error
	// SessionUsage sums a session's usage, in all and per turn.
	SessionUsage(ctx context.Context, sessionID string) (session.SessionUsage, error)
}

// Parks are where a session waits (budgets, start approvals, credentials,
// identities), and the sealed credentials they wait for.
type Parks interface {
	// OpenPark parks a session: in one transaction, the park and its held
	// recovery command. While the session has an open park of the same
	// reason, that one is returned (created=false) and nothing is added.
	OpenPark(ctx context.Context, p session.Park, recovery NewCommand) (park session.Park, created bool, err error)
	// ResolvePark resolves an open park (session.ParkGranted, ParkCleared,
	// ParkExpired, ParkCanceled): its recovery command becomes pending
	// (granted, cleared) or canceled. One already resolved is errdefs.ErrConflict.
	ResolvePark(ctx context.Context, id, resolution string, by *session.Sender, note string) (session.Park, error)
	GetPark(ctx context.Context, id string) (session.Park, error)
	// ListParks lists a session's parks ("" for every session's), only
	// the open ones when open is set, oldest first.
	ListParks(ctx context.Context, sessionID string, open bool) ([]session.Park, error)
	// SetCredentials keeps a session's credentials, sealed (encrypted by
	// the caller), replacing any; Credentials reads them. A session's
	// credentials are deleted when it ends.
	SetCredentials(ctx context.Context, sessionID string, sealed map[string][]byte) error
	Credentials(ctx context.Context, sessionID string) (map[string][]byte, error)
	// SetProjectCredentials keeps a project's service credentials, sealed,
	// by name (others kept); ProjectCredentials reads them.
	SetProjectCredentials(ctx context.Context, project string, sealed map[string][]byte) error
	ProjectCredentials(ctx context.Context, project string) (map[string][]byte, error)
	// PassPark resolves park id as granted without releasing its held
	// recovery command, and opens next (the next gate) on the same command,
	// in one transaction.
	PassPark(ctx context.Context, id string, by *session.Sender, note string, next session.Park) (session.Park, error)
}

// Connections are projects' connections to their forges (package
// forge), each with its credential sealed by the caller.
type Connections interface {
	// AddConnection records a connection and its sealed credential
	// (errdefs.ErrConflict while a live one has its name; a revoked one
	// of that name is replaced). ListConnections lists a project's, the
	// revoked ones too; Connection reads one with its sealed credential.
	AddConnection(ctx context.Context, c forge.Connection, sealed []byte) (forge.Connection, error)
	ListConnections(ctx context.Context, project string) ([]forge.Connection, error)
	Connection(ctx context.Context, project, name string) (forge.Connection, []byte, error)
	// RevokeConnection marks a connection revoked by by and deletes its
	// credential (errdefs.ErrConflict when it was revoked already).
	RevokeConnection(ctx context.Context, project, name, by string) (forge.Connection, error)
	// Bind records a binding of a session (once: binding the same thing
	// again returns the first); Bindings lists a session's, the released
	// ones too; ReleaseBindings releases every live binding of the
	// project's sessions to that pull request, saying how many. Archiving
	// a session releases its bindings too.
	Bind(ctx context.Context, b session.Binding) (session.Binding, error)
	Bindings(ctx context.Context, sessionID string) ([]session.Binding, error)
	// BoundTo lists the live bindings of a project's sessions to a pull
	// request, oldest first.
	BoundTo(ctx context.Context, project, connection, repo string, number int64) ([]session.Binding, error)
	ReleaseBindings(ctx context.Context, project, connection, repo string, number int64, by string) (int, error)
}

// ForgeLinks are people's own credentials on their projects'
// connections (forge.Link), each sealed by the caller.
type ForgeLinks interface {
	// LinkForge records a person's link to a live connection at l.URL,
	// replacing theirs (errdefs.ErrConflict when the connection is revoked
	// or elsewhere now); ForgeLink reads one with its sealed credential
	// (ErrNotFound: none); UnlinkForge deletes one; ForgetForgeLinks
	// deletes a person's in a project (every project's for ""). Revoking a
	// connection deletes its links.
	LinkForge(ctx context.Context, l forge.Link, sealed []byte) (forge.Link, error)
	ForgeLink(ctx context.Context, project, connection, user string) (forge.Link, []byte, error)
	UnlinkForge(ctx context.Context, project, connection, user string) error
	ForgetForgeLinks(ctx context.Context, project, user string) error
}

// Identity is users, tokens, projects and their members.
type Identity interface {
	// CreateUser adds a user (errdefs.ErrConflict when the name is taken, or the
	// directory identity already has one); GetUser, UserBySubject (by the
	// directory's issuer and subject) and ListUsers read them; RevokeUser
	// marks a user revoked and revokes every token of theirs.
	CreateUser(ctx context.Context, u identity.User) (identity.User, error)
	GetUser(ctx context.Context, name string) (identity.User, error)
	UserBySubject(ctx context.Context, issuer, subject string) (identity.User, error)
	ListUsers(ctx context.Context) ([]identity.User, error)
	RevokeUser(ctx context.Context, name string) error
	// CreateToken stores a token (its hash, never its secret); GetToken,
	// ListTokens (a user's, or all for ""), RevokeToken; TouchToken
	// records its use (at most once a minute).
	CreateToken(ctx context.Context, t identity.Token) (identity.Token, error)
	GetToken(ctx context.Context, id string) (identity.Token, error)
	ListTokens(ctx context.Context, user string) ([]identity.Token, error)
	RevokeToken(ctx context.Context, id string) error
	TouchToken(ctx context.Context, id string) error
	// CreateProject adds a project (errdefs.ErrConflict when it exists);
	// ListProjects names them all.
	CreateProject(ctx context.Context, name string) error
	ListProjects(ctx context.Context) ([]string, error)
	// SetMember gives a user a role in a project (replacing any other),
	// a user not created yet too (an invitation, theirs once they are);
	// RemoveMember takes it away; Members lists a project's members or a
	// user's memberships.
	SetMember(ctx context.Context, m identity.Membership) error
	RemoveMember(ctx context.Context, project, user string) error
	Members(ctx context.Context, project, user string) ([]identity.Membership, error)
}

// Audit is the audit log: the sessions' chained entries, the Merkle tree
// over them, its checkpoints, keys and seals, retained content, and the
// access log.
type Audit interface {
	// AuditLog is a session's audit log as stored, in order: an entry per
	// transcript event, chained, written in the event's transaction.
	AuditLog(ctx context.Context, sessionID string) ([]audit.Entry, error)
	// AuditAfter lists every session's entries in the order written (their
	// leaf index in the Merkle tree), from the one after leaf (-1: from the
	// first), at most limit, with the leaf of the last one listed (leaf
	// when none): a cursor for following the log as it grows.
	AuditAfter(ctx context.Context, leaf int64, limit int) ([]audit.Entry, int64, error)
	// AuditContent is the retained content of a session's entries, by seq,
	// as sealed (encrypted) when written; ExpireAuditContent deletes the
	// content whose retention ended before now, returning how much.
	AuditContent(ctx context.Context, sessionID string) (map[int64][]byte, error)
	ExpireAuditContent(ctx context.Context, now time.Time) (int64, error)
	// ServerSecret keeps fresh (sealed) as the server's secret name unless
	// one is kept already, and returns the one kept: every node of a
	// database ends up with the first node's (the audit signing key).
	ServerSecret(ctx context.Context, name string, fresh []byte) ([]byte, error)
	// SetContentRetention sets how long a project's audit content is kept
	// (0: not kept, the default); ContentRetention reads it.
	SetContentRetention(ctx context.Context, project string, d time.Duration) error
	ContentRetention(ctx context.Context, project string) (time.Duration, error)
	// AuditTree is the size of the Merkle tree of every audit entry and a
	// reader of its stored hashes; AuditLeaf an entry's leaf index and
	// leaf data (its stored JSON).
	AuditTree(ctx context.Context) (int64, tlog.HashReader, error)
	AuditLeaf(ctx context.Context, sessionID string, seq int64) (int64, string, error)
	// AuditLeaves lists the tree's leaves as stored, in order, from the
	// one after leaf (-1: from the first), at most limit: what verifying
	// the tree against the log reads.
	AuditLeaves(ctx context.Context, after int64, limit int) ([]AuditLeaf, error)
	// SaveAuditCheckpoint keeps a published checkpoint (the first of a
	// size stands); AuditCheckpoints lists them all, oldest first.
	SaveAuditCheckpoint(ctx context.Context, size int64, note string) error
	AuditCheckpoints(ctx context.Context) ([]string, error)
	// UseAuditKey records the audit signing key in use (its public key,
	// base64), and returns the keys used before it, oldest first, when it
	// is new (nil when it was known): a change of key is a rotation.
	UseAuditKey(ctx context.Context, public string) ([]string, error)
	// AuditKeys are every signing key recorded, oldest first.
	AuditKeys(ctx context.Context) ([]string, error)
	// SealAudit stores a session's seal (once; a seal of a head that is no
	// longer the log's is errdefs.ErrConflict); a sealed log gains no entries.
	SealAudit(ctx context.Context, seal audit.Seal) error
	// AppendAccess chains e onto the access log (audit.AccessLog) as the
	// next leaf of the tree, returning it as stored; AuditLog of
	// audit.AccessLog reads that log.
	AppendAccess(ctx context.Context, e audit.Entry) (audit.Entry, error)
	// AuditSeal is a session's seal, nil when unsealed.
	AuditSeal(ctx context.Context, sessionID string) (*audit.Seal, error)
}

// History is the steps a working copy went through (its state after each
// call), their files kept once in blobs.
type History interface {
	// SaveStep records the state of a session's working copy after a
	// call: the files that differ from its base, their content kept once
	// in blobs (sealed, by the ID of their plain content). A state equal to
	// the last one recorded adds nothing (false). Steps lists a
	// session's, oldest first; Blob reads one blob.
	SaveStep(ctx context.Context, c session.Step, blobs map[string][]byte) (session.Step, bool, error)
	Steps(ctx context.Context, sessionID string) ([]session.Step, error)
	// LastStep is a session's latest step (errdefs.ErrNotFound: none).
	LastStep(ctx context.Context, sessionID string) (session.Step, error)
	// DeleteSteps forgets a session's steps (its copy is
	// collected) and the blobs no other step uses; it returns how
	// many blobs went.
	DeleteSteps(ctx context.Context, sessionID string) (int64, error)
	Blob(ctx context.Context, id string) ([]byte, error)
}

// Events are the sessions' transcripts.
type Events interface {
	// AppendEvent adds a transcript event idempotently by (session, key)
	// and returns it with its sequence number.
	AppendEvent(ctx context.Context, e session.Event) (session.Event, error)
	// EventsByKey returns the session's events whose key starts with
	// prefix, in order (the transcript of one call, one turn, ...).
	EventsByKey(ctx context.Context, sessionID, prefix string) ([]session.Event, error)
	// ListEvents returns events with seq > after, in order, at most limit.
	ListEvents(ctx context.Context, sessionID string, after int64, limit int) ([]session.Event, error)
	// Subscribe returns a channel that receives (without blocking the
	// writer) after any event of the session is appended by this process.
	Subscribe(sessionID string) (ch <-chan struct{}, cancel func())
}

// Attachments are the files given with messages: uploaded to a project
// (staged, their uploader's), bound to the session whose message names
// them, their content kept once by digest, sealed by the caller.
type Attachments interface {
	// AddAttachment keeps a staged attachment and its sealed content,
	// unless its uploader's staged attachments in its project would hold
	// more than maxStaged bytes (ErrTooLarge); Attachment reads one
	// (ErrNotFound: none); AttachmentContent reads the sealed content of a
	// digest.
	AddAttachment(ctx context.Context, a session.Attachment, sealed []byte, maxStaged int64) error
	Attachment(ctx context.Context, id string) (session.Attachment, error)
	AttachmentContent(ctx context.Context, digest string) ([]byte, error)
	// SessionAttachments lists a session's, oldest first.
	SessionAttachments(ctx context.Context, sessionID string) ([]session.Attachment, error)
	// BindAttachments binds attachments to a session, all or none, in
	// order: each staged one takes a name no other of the session's has
	// (attachment.Unique); one bound to another session meanwhile is
	// ErrConflict, a session whose attachments would hold more than
	// maxTotal bytes ErrTooLarge. It returns them as bound.
	BindAttachments(ctx context.Context, sessionID string, ids []string, maxTotal int64) ([]session.Attachment, error)
	// DeleteAttachments forgets a session's (it is collected);
	// ExpireAttachments the staged ones uploaded before a time; both the
	// content no attachment names any more, and say how many went.
	DeleteAttachments(ctx context.Context, sessionID string) (int64, error)
	ExpireAttachments(ctx context.Context, before time.Time) (int64, error)
}

// Chats are projects' Slack apps, the Slack users linked to Paddock
// users, and the threads sessions are bound to (package chat).
type Chats interface {
	// SetChatApp records a project's app and its sealed credentials,
	// replacing the one it had; ChatApp reads one with them (ErrNotFound:
	// none); ChatApps lists every project's; RemoveChatApp deletes one.
	SetChatApp(ctx context.Context, a chat.App, sealed []byte) (chat.App, error)
	ChatApp(ctx context.Context, project string) (chat.App, []byte, error)
	ChatApps(ctx context.Context) ([]chat.App, error)
	RemoveChatApp(ctx context.Context, project string) error
	// AddChatCode keeps a linking code's digest for a Slack user of a
	// project's app until it expires; UseChatCode takes it (once:
	// ErrNotFound after, or once expired), and LinkChatUser links that
	// Slack user to a Paddock user for that project's app, replacing an
	// earlier link. ChatUser is the Paddock user a Slack user is linked
	// to there (ErrNotFound: none); ChatLinks a user's links;
	// UnlinkChatUser removes one of them.
	AddChatCode(ctx context.Context, digest string, l chat.Link, expires time.Time) error
	UseChatCode(ctx context.Context, digest string) (chat.Link, error)
	LinkChatUser(ctx context.Context, l chat.Link) (chat.Link, error)
	ChatUser(ctx context.Context, project, team, slackUser string) (string, error)
	ChatLinks(ctx context.Context, user string) ([]chat.Link, error)
	UnlinkChatUser(ctx context.Context, l chat.Link) error
	// BindThread binds a session to a thread (the same binding again is
	// no change; another session's thread, or another thread of the
	// session, is ErrConflict); ThreadOf and ThreadAt find one
	// (ErrNotFound: none); OpenThreads are those not done.
	BindThread(ctx context.Context, t chat.Thread) (chat.Thread, error)
	ThreadOf(ctx context.Context, sessionID string) (chat.Thread, error)
	ThreadAt(ctx context.Context, team, channel, ts string) (chat.Thread, error)
	OpenThreads(ctx context.Context) ([]chat.Thread, error)
	// LeaseThread gives owner the thread's relaying until until, unless
	// another owner holds an unexpired lease; SaveThread records what was
	// relayed (cursor, state, done) while owner holds the lease.
	LeaseThread(ctx context.Context, sessionID, owner string, until time.Time) (bool, error)
	SaveThread(ctx context.Context, t chat.Thread, owner string) error
	// SeenDelivery records a delivery's digest and says whether it was
	// seen before; digests older than keep are forgotten.
	SeenDelivery(ctx context.Context, digest string, keep time.Duration) (bool, error)
}
