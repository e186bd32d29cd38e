package api

import (
	"net/http"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	var req wire.ExtendRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.Gates().Extend(r.Context(), principal(r), r.PathValue("id"), req)
	if err != nil && p.ResolvedAt == nil {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("extension granted, session not woken", "err", err)
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) unpark(w http.ResponseWriter, r *http.Request) {
	n, err := note(w, r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.Gates().Unpark(r.Context(), principal(r), r.PathValue("id"), n)
	if err != nil && p.ResolvedAt == nil {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("park resolved, session not woken", "err", err)
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) listParks(w http.ResponseWriter, r *http.Request) {
	list, err := s.Service.Gates().Parks(r.Context(), principal(r), r.PathValue("id"), false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nonNil(list))
}

func (s *Server) parked(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("project") {
		if err := s.readProject(r, q.Get("project")); err != nil {
			s.error(w, r, err)
			return
		}
	}
	f := session.Filter{Project: q.Get("project"), Agent: q.Get("agent"), IncludeArchived: true}
	list, err := s.Service.Gates().Parked(r.Context(), principal(r), identity.Read, f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Sessions().Release(r.Context(), principal(r), r.PathValue("id"))
	if err != nil && x.ID == "" {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) approveStart(w http.ResponseWriter, r *http.Request) {
	var in wire.StartDecision
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.Gates().ApproveStart(r.Context(), principal(r), r.PathValue("id"), in.Approve, in.Note)
	if err != nil && p.ResolvedAt == nil {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("start decided; waking the session failed (it starts when the engine is reachable)", "session", p.SessionID, "err", err)
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) setCredentials(w http.ResponseWriter, r *http.Request) {
	var in wire.Credentials
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.Gates().SetCredentials(r.Context(), principal(r), r.PathValue("id"), in.Values)
	if err != nil && p.ResolvedAt == nil {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("credentials given; waking the session failed (it starts when the engine is reachable)", "session", p.SessionID, "err", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) chooseIdentity(w http.ResponseWriter, r *http.Request) {
	var in wire.IdentityChoice
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.Gates().ChooseIdentity(r.Context(), principal(r), r.PathValue("id"), in.As)
	if err != nil && p.ResolvedAt == nil {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("identity chosen; waking the session failed (it starts when the engine is reachable)", "session", p.SessionID, "err", err)
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) setProjectCredentials(w http.ResponseWriter, r *http.Request) {
	var in wire.Credentials
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.Service.Gates().SetProjectCredentials(r.Context(), principal(r), r.PathValue("name"), in.Values); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
