package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Whoami is the caller and their projects.
func (c Access) Whoami(ctx context.Context) (wire.Whoami, error) {
	var out wire.Whoami
	err := c.json(ctx, http.MethodGet, "/v1/whoami", nil, &out)
	return out, err
}

// Projects lists the caller's projects and roles.
func (c Access) Projects(ctx context.Context) ([]identity.Membership, error) {
	var out struct {
		Projects []identity.Membership `json:"projects"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/projects", nil, &out)
	return out.Projects, err
}

// CreateProject adds a project.
func (c Access) CreateProject(ctx context.Context, name string) error {
	return c.json(ctx, http.MethodPost, "/v1/projects", wire.NewProject{Name: name}, nil)
}

// Members lists a project's members.
func (c Access) Members(ctx context.Context, project string) ([]identity.Membership, error) {
	var out struct {
		Members []identity.Membership `json:"members"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/members", nil, &out)
	return out.Members, err
}

// SetMember gives user a role in project.
func (c Access) SetMember(ctx context.Context, project, user string, role identity.Role) error {
	return c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/members/"+url.PathEscape(user), wire.NewMember{Role: role}, nil)
}

// RemoveMember takes user's role in project away.
func (c Access) RemoveMember(ctx context.Context, project, user string) error {
	return c.json(ctx, http.MethodDelete, "/v1/projects/"+url.PathEscape(project)+"/members/"+url.PathEscape(user), nil, nil)
}

// Users lists users.
func (c Access) Users(ctx context.Context) ([]identity.User, error) {
	var out struct {
		Users []identity.User `json:"users"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/users", nil, &out)
	return out.Users, err
}

// CreateUser adds a user.
func (c Access) CreateUser(ctx context.Context, name string, admin bool) (identity.User, error) {
	var out identity.User
	err := c.json(ctx, http.MethodPost, "/v1/users", wire.NewUser{Name: name, Admin: admin}, &out)
	return out, err
}

// RevokeUser revokes a user and stops their live sessions.
func (c Access) RevokeUser(ctx context.Context, name string) (wire.Revoked, error) {
	var out wire.Revoked
	err := c.json(ctx, http.MethodPost, "/v1/users/"+url.PathEscape(name)+"/revoke", nil, &out)
	return out, err
}

// CreateToken mints a token; its text is in the result, shown once.
func (c Access) CreateToken(ctx context.Context, req wire.NewToken) (wire.NewTokenResult, error) {
	var out wire.NewTokenResult
	err := c.json(ctx, http.MethodPost, "/v1/tokens", req, &out)
	return out, err
}

// Tokens lists a user's tokens ("" with all: everyone's).
func (c Access) Tokens(ctx context.Context, user string, all bool) ([]identity.Token, error) {
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
func (c Access) RevokeToken(ctx context.Context, id string) error {
	return c.json(ctx, http.MethodPost, "/v1/tokens/"+url.PathEscape(id)+"/revoke", nil, nil)
}

// OIDCConfig is how to log in through the server's directory.
func (c Access) OIDCConfig(ctx context.Context) (wire.OIDCConfig, error) {
	var out wire.OIDCConfig
	err := c.json(ctx, http.MethodGet, "/v1/login/oidc", nil, &out)
	return out, err
}

// LoginOIDC exchanges a directory's ID token for a Paddock token.
func (c Access) LoginOIDC(ctx context.Context, in wire.OIDCLogin) (wire.NewTokenResult, error) {
	var out wire.NewTokenResult
	err := c.json(ctx, http.MethodPost, "/v1/login/oidc", in, &out)
	return out, err
}

// Status is the node's and its cluster's health (server administrators).
func (c *Client) Status(ctx context.Context) (wire.Status, error) {
	var out wire.Status
	err := c.json(ctx, http.MethodGet, "/v1/status", nil, &out)
	return out, err
}
