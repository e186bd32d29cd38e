package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Create starts a session.
func (c Sessions) Create(ctx context.Context, req wire.CreateRequest) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions", req, &out)
	return out, err
}

// List lists sessions.
func (c Sessions) List(ctx context.Context, f session.Filter) ([]session.Session, error) {
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
	if f.Before != "" {
		q.Set("before", f.Before)
	}
	var out struct {
		Sessions []session.Session `json:"sessions"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/sessions?"+q.Encode(), nil, &out)
	return out.Sessions, err
}

// Get gets one session.
func (c Sessions) Get(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &out)
	return out, err
}

// Send sends a command.
func (c Sessions) Send(ctx context.Context, id string, req wire.SendRequest) (session.Command, error) {
	var out session.Command
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/commands", req, &out)
	return out, err
}

// Commands lists a session's commands.
func (c Sessions) Commands(ctx context.Context, id string) ([]session.Command, error) {
	var out struct {
		Commands []session.Command `json:"commands"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/commands", nil, &out)
	return out.Commands, err
}

// Turns lists a session's turns.
func (c Sessions) Turns(ctx context.Context, id string) ([]session.Turn, error) {
	var out struct {
		Turns []session.Turn `json:"turns"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/turns", nil, &out)
	return out.Turns, err
}

// Events returns the transcript after a position.
func (c Sessions) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	var out struct {
		Events []session.Event `json:"events"`
	}
	err := c.json(ctx, http.MethodGet, fmt.Sprintf("/v1/sessions/%s/events?after=%d", url.PathEscape(id), after), nil, &out)
	return out.Events, err
}

// Archive archives a session.
func (c Sessions) Archive(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/archive", nil, &out)
	return out, err
}

// Retry retries a failed session.
func (c Sessions) Retry(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/retry", nil, &out)
	return out, err
}

// Hold freezes a session for inspection.
func (c Sessions) Hold(ctx context.Context, id, reason string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/hold", wire.Decision{Note: reason}, &out)
	return out, err
}

// Waive waives a session's delivery requirement, with the reason.
func (c Sessions) Waive(ctx context.Context, id, reason string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/waive", wire.Decision{Note: reason}, &out)
	return out, err
}

// Release ends a session's hold.
func (c Sessions) Release(ctx context.Context, id string) (session.Session, error) {
	var out session.Session
	err := c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/release", nil, &out)
	return out, err
}

// Stream follows the transcript over SSE from after, calling fn for each
// event, until the session ends (nil), fn returns an error, or ctx ends. A
// dropped connection is resumed with Last-Event-ID.
//
// While the server cannot be reached at all, Stream keeps trying for
// ReconnectFor, then gives up with the reason.
func (c Sessions) Stream(ctx context.Context, id string, after int64, fn func(session.Event) error) error {
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
				c.server(), ReconnectFor, down.err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Disk returns what a session's working copy and caches use on disk, and
// its disk budget.
func (c Sessions) Disk(ctx context.Context, id string) (wire.DiskResponse, error) {
	var out wire.DiskResponse
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/disk", nil, &out)
	return out, err
}

// Usage returns a session's token usage and cost.
func (c Sessions) Usage(ctx context.Context, id string) (session.SessionUsage, error) {
	var out session.SessionUsage
	err := c.json(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/usage", nil, &out)
	return out, err
}

// Revoke stops a session on an administrator's word.
func (c Sessions) Revoke(ctx context.Context, id string) error {
	return c.json(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/revoke", nil, nil)
}
