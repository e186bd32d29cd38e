// Package client is the typed Go client of Paddock's HTTP API, used by the
// CLI and by end-to-end tests.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Client talks to one Paddock server.
type Client struct {
	base  string
	token string
	http  *http.Client
	err   error // every call fails with it (Failing)
}

// WithToken is the client sending token (Authorization: Bearer) on every
// call.
func (c *Client) WithToken(token string) *Client {
	d := *c
	d.token = strings.TrimSpace(token)
	return &d
}

func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// Failing returns a client whose every call fails with err: the reason no
// server could be reached or started.
func Failing(err error) *Client { return &Client{err: err, http: &http.Client{}} }

// New returns a client for a base URL such as http://127.0.0.1:7470.
func New(base string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{}}
}

// Error is an error response from the server.
type Error struct {
	Status int
	Body   wire.Error
}

func (e *Error) Error() string { return e.Body.Error }

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	if c.err != nil {
		return c.err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	c.authorize(req)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the paddock server at %s (start one with `paddock serve`, or set PADDOCK_SERVER): %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e wire.Error
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(data)))
		}
		return &Error{Status: resp.StatusCode, Body: e}
	}
	if out == nil {
		return nil
	}
	if w, ok := out.(io.Writer); ok {
		_, err := io.Copy(w, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *Client) json(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	return c.do(ctx, method, path, body, "application/json", out)
}

// Health returns nil when the server is ready.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, "", nil)
}

// Apply applies YAML agent specs.
func (c *Client) Apply(ctx context.Context, yamlText []byte) ([]wire.Applied, error) {
	var out struct {
		Applied []wire.Applied `json:"applied"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/agents", bytes.NewReader(yamlText), "application/yaml", &out)
	return out.Applied, err
}

// Agents lists applied agents.
func (c *Client) Agents(ctx context.Context) ([]spec.Record, error) {
	var out struct {
		Agents []spec.Record `json:"agents"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/agents", nil, &out)
	return out.Agents, err
}

// Agent gets one agent.
func (c *Client) Agent(ctx context.Context, name string) (spec.Record, error) {
	var out spec.Record
	err := c.json(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(name), nil, &out)
	return out, err
}

// CreateSession starts a session.
func (c *Client) CreateSession(ctx context.Context, req wire.CreateRequest) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions", req, &out)
	return out, err
}

// Sessions lists sessions.
func (c *Client) Sessions(ctx context.Context, f session.Filter) ([]session.Session, error) {
	q := url.Values{}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.IncludeArchived {
		q.Set("archived", "true")
	}
	if f.Project != "" {
		q.Set("project", f.Project)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Sessions []session.Session `json:"sessions"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/sessions?"+q.Encode(), nil, &out)
	return out.Sessions, err
}

// Session gets one session.
func (c *Client) Session(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &out)
	return out, err
}

// Send sends a command.
func (c *Client) Send(ctx context.Context, id string, req wire.SendRequest) (session.Command, error) {
	var out session.Command
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/commands", req, &out)
	return out, err
}

// Commands lists a session's commands.
func (c *Client) Commands(ctx context.Context, id string) ([]session.Command, error) {
	var out struct {
		Commands []session.Command `json:"commands"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/commands", nil, &out)
	return out.Commands, err
}

// Turns lists a session's turns.
func (c *Client) Turns(ctx context.Context, id string) ([]session.Turn, error) {
	var out struct {
		Turns []session.Turn `json:"turns"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/turns", nil, &out)
	return out.Turns, err
}

// Events returns the transcript after a position.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	var out struct {
		Events []session.Event `json:"events"`
	}
	err := c.json(ctx, http.MethodGet, fmt.Sprintf("/v1/sessions/%s/events?after=%d", url.PathEscape(id), after), nil, &out)
	return out.Events, err
}

// Archive archives a session.
func (c *Client) Archive(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/archive", nil, &out)
	return out, err
}

// Retry retries a failed session.
func (c *Client) Retry(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/retry", nil, &out)
	return out, err
}

// Extend grants a session parked on its budget an extension, or a
// higher spend cap.
func (c *Client) Extend(ctx context.Context, id string, req wire.ExtendRequest) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/extend", req, &out)
	return out, err
}

// AuditLog is a session's audit log; with content, each entry carries
// the content its project retained.
func (c *Client) AuditLog(ctx context.Context, id string, content bool) ([]wire.AuditEntry, error) {
	var out []wire.AuditEntry
	path := "/v1/sessions/" + url.PathEscape(id) + "/audit"
	if content {
		path += "?content=true"
	}
	err := c.json(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// ExportAudit streams every session's audit entries written since (zero:
// all) in format (jsonl or cef) to w, in the order written; following, it
// goes on with the entries written next until ctx ends.
func (c *Client) ExportAudit(ctx context.Context, w io.Writer, format string, since time.Time, follow bool) error {
	q := url.Values{"format": {format}}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	if follow {
		q.Set("follow", "true")
	}
	return c.do(ctx, http.MethodGet, "/v1/audit/export?"+q.Encode(), nil, "", w)
}

// ContentRetention is how long project keeps audit content ("0s": none).
func (c *Client) ContentRetention(ctx context.Context, project string) (string, error) {
	var out wire.Retention
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/retention", nil, &out)
	return out.Content, err
}

// SetContentRetention sets how long project keeps audit content.
func (c *Client) SetContentRetention(ctx context.Context, project string, d time.Duration) (string, error) {
	var out wire.Retention
	err := c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/retention", wire.Retention{Content: d.String()}, &out)
	return out.Content, err
}

// Checkpoint is a signed checkpoint of the audit tree.
func (c *Client) Checkpoint(ctx context.Context) ([]byte, error) {
	var b bytes.Buffer
	err := c.do(ctx, http.MethodGet, "/v1/audit/checkpoint", nil, "", &b)
	return b.Bytes(), err
}

// Prove asks for the proofs of entry seq of session id (and of the log's
// growth since a checkpoint of oldSize, when > 0).
func (c *Client) Prove(ctx context.Context, id string, seq, oldSize int64) (audit.Proof, error) {
	q := url.Values{"session": {id}, "seq": {strconv.FormatInt(seq, 10)}}
	if oldSize > 0 {
		q.Set("old", strconv.FormatInt(oldSize, 10))
	}
	var out audit.Proof
	err := c.json(ctx, http.MethodGet, "/v1/audit/prove?"+q.Encode(), nil, &out)
	return out, err
}

// AuditKey is the server's public key that seals audit logs (base64).
func (c *Client) AuditKey(ctx context.Context) (string, error) {
	var out struct {
		PublicKey string `json:"publicKey"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/audit/key", nil, &out)
	return out.PublicKey, err
}

// VerifyAudit verifies a session's audit log, or every session's ("").
func (c *Client) VerifyAudit(ctx context.Context, id string) ([]wire.AuditReport, error) {
	q := url.Values{}
	if id != "" {
		q.Set("session", id)
	}
	var out []wire.AuditReport
	err := c.json(ctx, http.MethodGet, "/v1/audit/verify?"+q.Encode(), nil, &out)
	return out, err
}

// Hold freezes a session for inspection.
func (c *Client) Hold(ctx context.Context, id, reason string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/hold", wire.Decision{Note: reason}, &out)
	return out, err
}

// Waive waives a session's delivery requirement, with the reason.
func (c *Client) Waive(ctx context.Context, id, reason string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/waive", wire.Decision{Note: reason}, &out)
	return out, err
}

// Release ends a session's hold.
func (c *Client) Release(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/release", nil, &out)
	return out, err
}

// Unpark resolves a session's park on credits or the provider.
func (c *Client) Unpark(ctx context.Context, id, note string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/unpark", wire.Decision{Note: note}, &out)
	return out, err
}

// Parks lists a session's parks, open and resolved.
func (c *Client) Parks(ctx context.Context, id string) ([]session.Park, error) {
	var out []session.Park
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/parks", nil, &out)
	return out, err
}

// History lists a session's working-copy checkpoints, oldest first.
func (c *Client) History(ctx context.Context, id string) ([]session.Step, error) {
	var out []session.Step
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/history", nil, &out)
	return out, err
}

// Parked lists the sessions waiting on someone, and what they need.
func (c *Client) Parked(ctx context.Context, project, agent string) ([]wire.Parked, error) {
	q := url.Values{}
	if project != "" {
		q.Set("project", project)
	}
	if agent != "" {
		q.Set("agent", agent)
	}
	var out []wire.Parked
	err := c.json(ctx, http.MethodGet, "/v1/parked?"+q.Encode(), nil, &out)
	return out, err
}

// Stream follows the transcript over SSE from after, calling fn for each
// event, until the session ends (nil), fn returns an error, or ctx ends. A
// dropped connection is resumed with Last-Event-ID.
//
// While the server cannot be reached at all, Stream keeps trying for
// ReconnectFor, then gives up with the reason.
func (c *Client) Stream(ctx context.Context, id string, after int64, fn func(session.Event) error) error {
	if c.err != nil {
		return c.err
	}
	var downSince time.Time
	for {
		done, err := c.stream(ctx, id, &after, fn)
		if done || ctx.Err() != nil {
			return err
		}
		if _, ok := err.(*Error); ok {
			return err
		}
		var down *unreachable
		switch {
		case !errors.As(err, &down):
			downSince = time.Time{}
		case downSince.IsZero():
			downSince = time.Now()
		case time.Since(downSince) > ReconnectFor:
			return fmt.Errorf("cannot reach the paddock server at %s (tried for %s; is it running? start one with `paddock serve`, or set PADDOCK_SERVER): %w",
				c.base, ReconnectFor, down.err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *Client) stream(ctx context.Context, id string, after *int64, fn func(session.Event) error) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/sessions/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		return true, err
	}
	c.authorize(req)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	resp, err := c.http.Do(req)
	if err != nil {
		return false, &unreachable{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e wire.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return true, &Error{Status: resp.StatusCode, Body: e}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		case line == "":
			if event == "end" {
				return true, nil
			}
			if data != "" {
				var e session.Event
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					return true, fmt.Errorf("bad event from server: %w", err)
				}
				*after = e.Seq
				if err := fn(e); err != nil {
					return true, err
				}
			}
			event, data = "", ""
		}
	}
	return false, sc.Err()
}

// ReconnectFor is how long Stream keeps trying a server it cannot reach.
var ReconnectFor = 30 * time.Second

// unreachable is a connection that could not be made at all.
type unreachable struct{ err error }

func (u *unreachable) Error() string { return u.err.Error() }
func (u *unreachable) Unwrap() error { return u.err }

// Approvals lists approvals (filter by session and status).
func (c *Client) Approvals(ctx context.Context, f session.ApprovalFilter) ([]session.Approval, error) {
	q := url.Values{}
	if f.SessionID != "" {
		q.Set("session", f.SessionID)
	}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	var out struct {
		Approvals []session.Approval `json:"approvals"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/approvals?"+q.Encode(), nil, &out)
	return out.Approvals, err
}

// Decide approves or rejects an approval.
func (c *Client) Decide(ctx context.Context, id string, approve bool, note string) (session.Approval, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	var out session.Approval
	err := c.json(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, wire.Decision{Note: note}, &out)
	return out, err
}

// SetPolicy makes a YAML policy a project's policy and returns its digest.
func (c *Client) SetPolicy(ctx context.Context, project string, yamlText []byte) (string, error) {
	var out struct {
		Digest string `json:"digest"`
	}
	err := c.do(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/policy", bytes.NewReader(yamlText), "application/yaml", &out)
	return out.Digest, err
}

// Policy returns a project's policy as JSON.
func (c *Client) Policy(ctx context.Context, project string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/policy", nil, &out)
	return out, err
}

// ReplayPolicy judges a project's recorded tool calls under a YAML policy
// and returns what would change. since is a duration such as 7d or a date
// ("" for every session); examples bounds the examples per rule.
func (c *Client) ReplayPolicy(ctx context.Context, project string, yamlText []byte, since string, examples int) (policy.ReplayReport, error) {
	var out policy.ReplayReport
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	q.Set("examples", strconv.Itoa(examples))
	err := c.do(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(project)+"/policy/replay?"+q.Encode(), bytes.NewReader(yamlText), "application/yaml", &out)
	return out, err
}

// Diff returns a session's diff against its base commit.
func (c *Client) Diff(ctx context.Context, id string) (wire.DiffResponse, error) {
	var out wire.DiffResponse
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/diff", nil, &out)
	return out, err
}

// Accept records that the diff was applied to the user's repository.
func (c *Client) Accept(ctx context.Context, id string, req wire.AcceptRequest) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/accept", req, &out)
	return out, err
}

// Reject discards the session's changes.
func (c *Client) Reject(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/reject", nil, &out)
	return out, err
}

// Disk returns what a session's working copy and caches use on disk, and
// its disk budget.
func (c *Client) Disk(ctx context.Context, id string) (wire.DiskResponse, error) {
	var out wire.DiskResponse
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/disk", nil, &out)
	return out, err
}

// GC collects the working copies no longer needed.
func (c *Client) GC(ctx context.Context) ([]wire.Collected, error) {
	var out struct {
		Collected []wire.Collected `json:"collected"`
	}
	err := c.json(ctx, http.MethodPost, "/v1/gc", nil, &out)
	return out.Collected, err
}

// Usage returns a session's token usage and cost.
func (c *Client) Usage(ctx context.Context, id string) (session.SessionUsage, error) {
	var out session.SessionUsage
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/usage", nil, &out)
	return out, err
}

// Whoami is the caller and their projects.
func (c *Client) Whoami(ctx context.Context) (wire.Whoami, error) {
	var out wire.Whoami
	err := c.json(ctx, http.MethodGet, "/v1/whoami", nil, &out)
	return out, err
}

// Projects lists the caller's projects and roles.
func (c *Client) Projects(ctx context.Context) ([]identity.Membership, error) {
	var out struct {
		Projects []identity.Membership `json:"projects"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/projects", nil, &out)
	return out.Projects, err
}

// CreateProject adds a project.
func (c *Client) CreateProject(ctx context.Context, name string) error {
	return c.json(ctx, http.MethodPost, "/v1/projects", wire.NewProject{Name: name}, nil)
}

// Members lists a project's members.
func (c *Client) Members(ctx context.Context, project string) ([]identity.Membership, error) {
	var out struct {
		Members []identity.Membership `json:"members"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/members", nil, &out)
	return out.Members, err
}

// SetMember gives user a role in project.
func (c *Client) SetMember(ctx context.Context, project, user string, role identity.Role) error {
	return c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/members/"+url.PathEscape(user), wire.NewMember{Role: role}, nil)
}

// RemoveMember takes user's role in project away.
func (c *Client) RemoveMember(ctx context.Context, project, user string) error {
	return c.json(ctx, http.MethodDelete, "/v1/projects/"+url.PathEscape(project)+"/members/"+url.PathEscape(user), nil, nil)
}

// Users lists users.
func (c *Client) Users(ctx context.Context) ([]identity.User, error) {
	var out struct {
		Users []identity.User `json:"users"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/users", nil, &out)
	return out.Users, err
}

// CreateUser adds a user.
func (c *Client) CreateUser(ctx context.Context, name string, admin bool) (identity.User, error) {
	var out identity.User
	err := c.json(ctx, http.MethodPost, "/v1/users", wire.NewUser{Name: name, Admin: admin}, &out)
	return out, err
}

// RevokeUser revokes a user and stops their live sessions.
func (c *Client) RevokeUser(ctx context.Context, name string) (wire.Revoked, error) {
	var out wire.Revoked
	err := c.json(ctx, http.MethodPost, "/v1/users/"+url.PathEscape(name)+"/revoke", nil, &out)
	return out, err
}

// RevokeSession stops a session on an administrator's word.
func (c *Client) RevokeSession(ctx context.Context, id string) error {
	return c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/revoke", nil, nil)
}

// CreateToken mints a token; its text is in the result, shown once.
func (c *Client) CreateToken(ctx context.Context, req wire.NewToken) (wire.NewTokenResult, error) {
	var out wire.NewTokenResult
	err := c.json(ctx, http.MethodPost, "/v1/tokens", req, &out)
	return out, err
}

// Tokens lists a user's tokens ("" with all: everyone's).
func (c *Client) Tokens(ctx context.Context, user string, all bool) ([]identity.Token, error) {
	var out struct {
		Tokens []identity.Token `json:"tokens"`
	}
	path := "/v1/tokens"
	if all || user != "" {
		path += "?user=" + url.QueryEscape(user)
	}
	err := c.json(ctx, http.MethodGet, path, nil, &out)
	return out.Tokens, err
}

// RevokeToken revokes a token.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.json(ctx, http.MethodPost, "/v1/tokens/"+url.PathEscape(id)+"/revoke", nil, nil)
}

// OIDCConfig is how to log in through the server's directory.
func (c *Client) OIDCConfig(ctx context.Context) (wire.OIDCConfig, error) {
	var out wire.OIDCConfig
	err := c.json(ctx, http.MethodGet, "/v1/login/oidc", nil, &out)
	return out, err
}

// LoginOIDC exchanges a directory's ID token for a Paddock token.
func (c *Client) LoginOIDC(ctx context.Context, in wire.OIDCLogin) (wire.NewTokenResult, error) {
	var out wire.NewTokenResult
	err := c.json(ctx, http.MethodPost, "/v1/login/oidc", in, &out)
	return out, err
}

// ApproveStart decides a session waiting for its start approval.
func (c *Client) ApproveStart(ctx context.Context, id string, approve bool, note string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/start", wire.StartDecision{Approve: approve, Note: note}, &out)
	return out, err
}

// SetCredentials gives a session waiting for them its requester's
// credentials.
func (c *Client) SetCredentials(ctx context.Context, id string, values map[string]string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/credentials", wire.Credentials{Values: values}, &out)
	return out, err
}

// AccessLog is the access log: logins, tokens, users, projects, members.
func (c *Client) AccessLog(ctx context.Context) ([]audit.Entry, error) {
	var out []audit.Entry
	err := c.json(ctx, http.MethodGet, "/v1/audit/access", nil, &out)
	return out, err
}

// ChooseIdentity answers a session waiting for its identity choice.
func (c *Client) ChooseIdentity(ctx context.Context, id, as string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/identity", wire.IdentityChoice{As: as}, &out)
	return out, err
}

// SetProjectCredentials keeps a project's service credentials.
func (c *Client) SetProjectCredentials(ctx context.Context, project string, values map[string]string) error {
	return c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/credentials", wire.Credentials{Values: values}, nil)
}
