package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
)

// Whoami is the caller and their projects.
type Whoami struct {
	identity.Principal
	Projects []identity.Membership `json:"projects"`
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	ms, err := s.Service.Projects(r.Context(), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Whoami{Principal: p, Projects: nonNil(ms)})
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Service.Projects(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"projects": nonNil(ms)})
}

// NewProject is the body of POST /v1/projects.
type NewProject struct {
	Name string `json:"name"`
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	var in NewProject
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.CreateProject(r.Context(), principal(r), in.Name); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, in)
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Service.Members(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": nonNil(ms)})
}

// NewMember is the body of PUT /v1/projects/{name}/members/{user}.
type NewMember struct {
	Role identity.Role `json:"role"`
}

func (s *Server) setMember(w http.ResponseWriter, r *http.Request) {
	var in NewMember
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	m := identity.Membership{Project: r.PathValue("name"), User: r.PathValue("user"), Role: in.Role}
	if err := s.Service.SetMember(r.Context(), principal(r), m); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.RemoveMember(r.Context(), principal(r), r.PathValue("name"), r.PathValue("user")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	us, err := s.Service.Users(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": nonNil(us)})
}

// NewUser is the body of POST /v1/users.
type NewUser struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	var in NewUser
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	u, err := s.Service.CreateUser(r.Context(), principal(r), in.Name, in.Admin)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}

// Revoked is what a revocation did.
type Revoked struct {
	User     string   `json:"user,omitempty"`
	Stopped  []string `json:"stopped"`
	Problems []string `json:"problems,omitempty"`
}

func (s *Server) revokeUser(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	stopped, problems, err := s.Service.RevokeUser(r.Context(), principal(r), r.PathValue("user"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Revoked{User: r.PathValue("user"), Stopped: nonNil(stopped), Problems: problems})
}

func (s *Server) revokeSession(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.RevokeSession(r.Context(), principal(r), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Revoked{Stopped: []string{r.PathValue("id")}})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	user := r.URL.Query().Get("user")
	if !r.URL.Query().Has("user") {
		user = p.User
	}
	ts, err := s.Service.Tokens(r.Context(), p, user)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": nonNil(ts)})
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

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var in NewToken
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	p := principal(r)
	if in.User == "" {
		in.User = p.User
	}
	var ttl time.Duration
	if in.Expires != "" {
		d, err := time.ParseDuration(in.Expires)
		if err != nil {
			s.error(w, r, fmt.Errorf("%w: expires %q: want a duration such as 720h", errdefs.ErrInvalid, clip(in.Expires)))
			return
		}
		ttl = d
	}
	t, full, err := s.Service.NewToken(r.Context(), p, in.User, in.Label, ttl)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, NewTokenResult{Token: t, Secret: full})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.RevokeToken(r.Context(), principal(r), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// OIDCConfig tells a client how to log in through the directory; an empty
// Issuer means login is not configured (API tokens only).
type OIDCConfig = engine.OIDCConfig

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

func (s *Server) oidcConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Service.OIDC.Config())
}

func (s *Server) loginOIDC(w http.ResponseWriter, r *http.Request) {
	var in OIDCLogin
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	t, full, err := s.Service.LoginOIDC(r.Context(), in.IDToken, in.AccessToken, in.Nonce, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, NewTokenResult{Token: t, Secret: full})
}
