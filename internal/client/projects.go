package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Apply applies YAML agent specs.
func (c Projects) Apply(ctx context.Context, yamlText []byte) ([]wire.Applied, error) {
	var out struct {
		Applied []wire.Applied `json:"applied"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/agents", bytes.NewReader(yamlText), "application/yaml", &out)
	return out.Applied, err
}

// Agents lists applied agents.
func (c Projects) Agents(ctx context.Context) ([]spec.Record, error) {
	var out struct {
		Agents []spec.Record `json:"agents"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/agents", nil, &out)
	return out.Agents, err
}

// Agent gets one agent.
func (c Projects) Agent(ctx context.Context, name string) (spec.Record, error) {
	var out spec.Record
	err := c.json(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(name), nil, &out)
	return out, err
}

// SetPolicy makes a YAML policy a project's policy and returns its digest.
func (c Projects) SetPolicy(ctx context.Context, project string, yamlText []byte) (string, error) {
	var out struct {
		Digest string `json:"digest"`
	}
	err := c.do(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/policy", bytes.NewReader(yamlText), "application/yaml", &out)
	return out.Digest, err
}

// Policy returns a project's policy as JSON.
func (c Projects) Policy(ctx context.Context, project string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/policy", nil, &out)
	return out, err
}

// ReplayPolicy judges a project's recorded tool calls under a YAML policy
// and returns what would change. since is a duration such as 7d or a date
// ("" for every session); examples bounds the examples per rule.
func (c Projects) ReplayPolicy(ctx context.Context, project string, yamlText []byte, since string, examples int) (policy.ReplayReport, error) {
	var out policy.ReplayReport
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	q.Set("examples", strconv.Itoa(examples))
	err := c.do(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(project)+"/policy/replay?"+q.Encode(), bytes.NewReader(yamlText), "application/yaml", &out)
	return out, err
}

// Connections lists a project's connections to its forges.
func (c Projects) Connections(ctx context.Context, project string) ([]forge.Connection, error) {
	var out struct {
		Connections []forge.Connection `json:"connections"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/connections", nil, &out)
	return out.Connections, err
}

// AddConnection adds a connection to a project's forge.
func (c Projects) AddConnection(ctx context.Context, project string, req wire.ConnectionRequest) (forge.Connection, error) {
	var out forge.Connection
	err := c.json(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(project)+"/connections", req, &out)
	return out, err
}

// RevokeConnection revokes a project's connection.
func (c Projects) RevokeConnection(ctx context.Context, project, name string) (forge.Connection, error) {
	var out forge.Connection
	err := c.json(ctx, http.MethodPost, "/v1/projects/"+url.PathEscape(project)+"/connections/"+url.PathEscape(name)+"/revoke", nil, &out)
	return out, err
}

// LinkForge links the caller's own account on a project's connection:
// pull requests of what they accept are opened as them.
func (c Projects) LinkForge(ctx context.Context, project, connection, credential string) (forge.Link, error) {
	var out forge.Link
	err := c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/connections/"+url.PathEscape(connection)+"/link",
		wire.LinkRequest{Credential: credential}, &out)
	return out, err
}

// UnlinkForge deletes the caller's link to a project's connection.
func (c Projects) UnlinkForge(ctx context.Context, project, connection string) error {
	return c.json(ctx, http.MethodDelete, "/v1/projects/"+url.PathEscape(project)+"/connections/"+url.PathEscape(connection)+"/link", nil, nil)
}
