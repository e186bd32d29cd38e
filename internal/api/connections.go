package api

import (
	"net/http"

	"github.com/paddock-dev/paddock/internal/wire"
)

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	cs, err := s.Service.Remotes.Connections(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": nonNil(cs)})
}

func (s *Server) addConnection(w http.ResponseWriter, r *http.Request) {
	var in wire.ConnectionRequest
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	c, err := s.Service.Remotes.AddConnection(r.Context(), principal(r), r.PathValue("name"), in)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) revokeConnection(w http.ResponseWriter, r *http.Request) {
	c, err := s.Service.Remotes.RevokeConnection(r.Context(), principal(r), r.PathValue("name"), r.PathValue("connection"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) linkForge(w http.ResponseWriter, r *http.Request) {
	var in wire.LinkRequest
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	l, err := s.Service.Remotes.LinkForge(r.Context(), principal(r), r.PathValue("name"), r.PathValue("connection"), in)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) unlinkForge(w http.ResponseWriter, r *http.Request) {
	if err := s.Service.Remotes.UnlinkForge(r.Context(), principal(r), r.PathValue("name"), r.PathValue("connection")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listBindings(w http.ResponseWriter, r *http.Request) {
	bs, err := s.Service.Remotes.Bindings(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bindings": nonNil(bs)})
}
