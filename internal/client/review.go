package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// History lists a session's working-copy checkpoints, oldest first.
func (c Review) History(ctx context.Context, id string) ([]session.Step, error) {
	var out []session.Step
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/history", nil, &out)
	return out, err
}

// Diff returns a session's diff against its base commit.
func (c Review) Diff(ctx context.Context, id string) (wire.DiffResponse, error) {
	var out wire.DiffResponse
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/diff", nil, &out)
	return out, err
}

// Accept records that the diff was applied to the user's repository.
func (c Review) Accept(ctx context.Context, id string, req wire.AcceptRequest) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/accept", req, &out)
	return out, err
}

// Reject discards the session's changes.
func (c Review) Reject(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/reject", nil, &out)
	return out, err
}

// GC collects the working copies no longer needed.
func (c Review) GC(ctx context.Context) ([]wire.Collected, error) {
	var out struct {
		Collected []wire.Collected `json:"collected"`
	}
	err := c.json(ctx, http.MethodPost, "/v1/gc", nil, &out)
	return out.Collected, err
}
