package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Extend grants a session parked on its budget an extension, or a
// higher spend cap.
func (c Gates) Extend(ctx context.Context, id string, req wire.ExtendRequest) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/extend", req, &out)
	return out, err
}

// Unpark resolves a session's park on credits or the provider.
func (c Gates) Unpark(ctx context.Context, id, note string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/unpark", wire.Decision{Note: note}, &out)
	return out, err
}

// Parks lists a session's parks, open and resolved.
func (c Gates) Parks(ctx context.Context, id string) ([]session.Park, error) {
	var out []session.Park
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/parks", nil, &out)
	return out, err
}

// Parked lists the sessions waiting on someone, and what they need.
func (c Gates) Parked(ctx context.Context, project, agent string) ([]wire.Parked, error) {
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

// Approvals lists approvals (filter by session and status).
func (c Gates) Approvals(ctx context.Context, f session.ApprovalFilter) ([]session.Approval, error) {
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
func (c Gates) Decide(ctx context.Context, id string, approve bool, note string) (session.Approval, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	var out session.Approval
	err := c.json(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, wire.Decision{Note: note}, &out)
	return out, err
}

// ApproveStart decides a session waiting for its start approval.
func (c Gates) ApproveStart(ctx context.Context, id string, approve bool, note string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/start", wire.StartDecision{Approve: approve, Note: note}, &out)
	return out, err
}

// SetCredentials gives a session waiting for them its requester's
// credentials.
func (c Gates) SetCredentials(ctx context.Context, id string, values map[string]string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/credentials", wire.Credentials{Values: values}, &out)
	return out, err
}

// ChooseIdentity answers a session waiting for its identity choice.
func (c Gates) ChooseIdentity(ctx context.Context, id, as string) (session.Park, error) {
	var out session.Park
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/identity", wire.IdentityChoice{As: as}, &out)
	return out, err
}

// SetProjectCredentials keeps a project's service credentials.
func (c Gates) SetProjectCredentials(ctx context.Context, project string, values map[string]string) error {
	return c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/credentials", wire.Credentials{Values: values}, nil)
}
