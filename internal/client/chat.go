package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/wire"
)

// SetSlackApp configures a project's Slack app (its admins).
func (c Projects) SetSlackApp(ctx context.Context, project string, req wire.SlackAppRequest) (chat.App, error) {
	var out chat.App
	err := c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/slack", req, &out)
	return out, err
}

// SlackApp is a project's Slack app (never its credentials).
func (c Projects) SlackApp(ctx context.Context, project string) (chat.App, error) {
	var out chat.App
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/slack", nil, &out)
	return out, err
}

// RemoveSlackApp removes a project's Slack app and its credentials.
func (c Projects) RemoveSlackApp(ctx context.Context, project string) error {
	return c.json(ctx, http.MethodDelete, "/v1/projects/"+url.PathEscape(project)+"/slack", nil, nil)
}

// LinkSlack confirms a linking code as the caller.
func (c Access) LinkSlack(ctx context.Context, code string) (chat.Link, error) {
	var out chat.Link
	err := c.json(ctx, http.MethodPost, "/v1/slack/links", wire.SlackLinkRequest{Code: code}, &out)
	return out, err
}

// SlackLinks are the caller's links to Slack users.
func (c Access) SlackLinks(ctx context.Context) ([]chat.Link, error) {
	var out struct {
		Links []chat.Link `json:"links"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/slack/links", nil, &out)
	return out.Links, err
}

// UnlinkSlack removes one of the caller's links.
func (c Access) UnlinkSlack(ctx context.Context, l chat.Link) error {
	return c.json(ctx, http.MethodDelete, "/v1/slack/links/"+url.PathEscape(l.Project)+"/"+url.PathEscape(l.Team)+"/"+url.PathEscape(l.SlackUser), nil, nil)
}
