package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/wire"
)

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	ms, err := s.Service.Access.Projects(r.Context(), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Whoami{Principal: p, Projects: nonNil(ms)})
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Service.Access.Projects(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"projects": nonNil(ms)})
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	var in wire.NewProject
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.Access.CreateProject(r.Context(), principal(r), in.Name); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, in)
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	ms, err := s.Service.Access.Members(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": nonNil(ms)})
}

func (s *Server) setMember(w http.ResponseWriter, r *http.Request) {
	var in wire.NewMember
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	m := identity.Membership{Project: r.PathValue("name"), User: r.PathValue("user"), Role: in.Role}
	if err := s.Service.Access.SetMember(r.Context(), principal(r), m); err != nil {
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
	if err := s.Service.Access.RemoveMember(r.Context(), principal(r), r.PathValue("name"), r.PathValue("user")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	us, err := s.Service.Access.Users(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": nonNil(us)})
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	var in wire.NewUser
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	u, err := s.Service.Access.CreateUser(r.Context(), principal(r), in.Name, in.Admin)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}

func (s *Server) revokeUser(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	stopped, problems, err := s.Service.Sessions().RevokeUser(r.Context(), principal(r), r.PathValue("user"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Revoked{User: r.PathValue("user"), Stopped: nonNil(stopped), Problems: problems})
}

func (s *Server) revokeSession(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.Sessions().Revoke(r.Context(), principal(r), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Revoked{Stopped: []string{r.PathValue("id")}})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	user := r.URL.Query().Get("user")
	if !r.URL.Query().Has("user") {
		user = p.User
	}
	ts, err := s.Service.Access.Tokens(r.Context(), p, user)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": nonNil(ts)})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var in wire.NewToken
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
			s.error(w, r, fmt.Errorf("%w: expires %q: want a duration such as 720h", errdefs.ErrInvalid, clip.String(in.Expires, 40)))
			return
		}
		ttl = d
	}
	t, full, err := s.Service.Access.NewToken(r.Context(), p, in.User, in.Label, ttl)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, wire.NewTokenResult{Token: t, Secret: full})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.Access.RevokeToken(r.Context(), principal(r), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) oidcConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Service.Access.OIDC.Config())
}

func (s *Server) loginOIDC(w http.ResponseWriter, r *http.Request) {
	var in wire.OIDCLogin
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	t, full, err := s.Service.Access.LoginOIDC(r.Context(), in.IDToken, in.AccessToken, in.Nonce, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, wire.NewTokenResult{Token: t, Secret: full})
}
