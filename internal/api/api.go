// Package api is Paddock's HTTP API: JSON under /v1, the transcript over
// SSE, and the one function that maps errors to HTTP statuses.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// Server serves the API.
type Server struct {
	Service *engine.Service
	Logger  *slog.Logger
	// Operator is the identity stamped on commands from this API's callers.
	Operator string
	// Ready reports whether /healthz should answer 200.
	Ready func() bool
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("POST /v1/agents", s.applyAgents)
	mux.HandleFunc("GET /v1/agents", s.listAgents)
	mux.HandleFunc("GET /v1/agents/{name}", s.getAgent)
	mux.HandleFunc("POST /v1/sessions", s.createSession)
	mux.HandleFunc("GET /v1/sessions", s.listSessions)
	mux.HandleFunc("GET /v1/sessions/{id}", s.getSession)
	mux.HandleFunc("POST /v1/sessions/{id}/commands", s.sendCommand)
	mux.HandleFunc("GET /v1/sessions/{id}/commands", s.listCommands)
	mux.HandleFunc("GET /v1/sessions/{id}/turns", s.listTurns)
	mux.HandleFunc("GET /v1/sessions/{id}/events", s.events)
	mux.HandleFunc("POST /v1/sessions/{id}/archive", s.archive)
	mux.HandleFunc("POST /v1/sessions/{id}/retry", s.retry)
	mux.HandleFunc("GET /v1/sessions/{id}/diff", s.diff)
	mux.HandleFunc("GET /v1/sessions/{id}/usage", s.usage)
	mux.HandleFunc("POST /v1/sessions/{id}/accept", s.accept)
	mux.HandleFunc("POST /v1/sessions/{id}/reject", s.reject)
	mux.HandleFunc("GET /v1/approvals", s.listApprovals)
	mux.HandleFunc("GET /v1/approvals/{id}", s.getApproval)
	mux.HandleFunc("POST /v1/approvals/{id}/approve", s.decide(true))
	mux.HandleFunc("POST /v1/approvals/{id}/reject", s.decide(false))
	mux.HandleFunc("GET /v1/projects/{name}/policy", s.getPolicy)
	mux.HandleFunc("PUT /v1/projects/{name}/policy", s.putPolicy)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.error(w, r, fmt.Errorf("%w: no route %s %s", store.ErrNotFound, r.Method, r.URL.Path))
	})
	return s.recoverer(mux)
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// SessionID names the live session holding a singleton slot (409).
	SessionID string `json:"sessionId,omitempty"`
}

// statusOf is the one mapping from errors to HTTP statuses.
func statusOf(err error) (int, string) {
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, "invalid"
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, store.ErrDenied):
		return http.StatusForbidden, "denied"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal"
}

func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code, name := statusOf(err)
	body := Error{Error: err.Error(), Code: name}
	var slot *store.SlotConflictError
	if errors.As(err, &slot) {
		body.SessionID = slot.SessionID
	}
	if code >= 500 {
		s.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		body.Error = "internal error; the server log has the details"
	}
	writeJSON(w, code, body)
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				s.error(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: unknown fields, wrong types and
// trailing data are 400s; bodies over MaxBody are 413s.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", store.ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: request body: trailing data after the JSON object", store.ErrInvalid)
	}
	return nil
}

func (s *Server) operator() session.Sender {
	return session.Sender{Kind: session.SenderOperator, ID: s.Operator}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.Ready != nil && !s.Ready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) applyAgents(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		s.error(w, r, err)
		return
	}
	res, err := s.Service.ApplyAgents(r.Context(), body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"applied": res})
}

func project(r *http.Request) string {
	if p := r.URL.Query().Get("project"); p != "" {
		return p
	}
	return "default"
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	list, err := s.Service.Store.ListAgents(r.Context(), project(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": nonNil(list)})
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.Service.Store.GetAgent(r.Context(), project(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req engine.CreateRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.CreateSession(r.Context(), req, s.operator())
	if err != nil && x.ID == "" {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("session recorded but its workflow did not start yet", "session", x.ID, "err", err)
	}
	writeJSON(w, http.StatusCreated, x)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.SessionFilter{Project: q.Get("project"), Agent: q.Get("agent"), Status: session.Status(q.Get("status")), IncludeArchived: q.Get("archived") == "true"}
	if f.Status != "" && !f.Status.Valid() {
		s.error(w, r, fmt.Errorf("%w: status %q: want queued, running, awaiting, failed or stopped", store.ErrInvalid, f.Status))
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			s.error(w, r, fmt.Errorf("%w: limit %q: want a positive number", store.ErrInvalid, l))
			return
		}
		f.Limit = n
	}
	list, err := s.Service.Store.ListSessions(r.Context(), f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": nonNil(list)})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	x, err := s.Service.Store.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) sendCommand(w http.ResponseWriter, r *http.Request) {
	var req engine.SendRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	c, err := s.Service.Send(r.Context(), r.PathValue("id"), req, s.operator())
	if err != nil && c.ID == "" {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, c)
}

func (s *Server) listCommands(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Service.Store.GetSession(r.Context(), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	list, err := s.Service.Store.ListCommands(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"commands": nonNil(list)})
}

func (s *Server) listTurns(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Service.Store.GetSession(r.Context(), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	list, err := s.Service.Store.ListTurns(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": nonNil(list)})
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	x, err := s.Service.Archive(r.Context(), r.PathValue("id"), s.operator())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	x, err := s.Service.Retry(r.Context(), r.PathValue("id"), s.operator())
	if err != nil && (x.ID == "" || x.ID == r.PathValue("id")) {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, x)
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.ApprovalFilter{SessionID: q.Get("session"), Status: session.ApprovalStatus(q.Get("status"))}
	list, err := s.Service.Store.ListApprovals(r.Context(), f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": nonNil(list)})
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	a, err := s.Service.Store.GetApproval(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// Decision is the body of approve and reject.
type Decision struct {
	Note string `json:"note,omitempty"`
}

func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var d Decision
		if err := decode(w, r, &d); err != nil {
			s.error(w, r, err)
			return
		}
		a, err := s.Service.DecideApproval(r.Context(), r.PathValue("id"), approve, d.Note, s.operator())
		if err != nil && a.Status == session.ApprovalPending || err != nil && a.ID == "" {
			s.error(w, r, err)
			return
		}
		if err != nil {
			s.Logger.Warn("approval decided, session not woken", "err", err)
		}
		writeJSON(w, http.StatusOK, a)
	}
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) {
	p, err := s.Service.ProjectPolicy(r.Context(), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"policy": p, "digest": p.Digest()})
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.SetProjectPolicy(r.Context(), r.PathValue("name"), body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"policy": p, "digest": p.Digest()})
}

// DiffResponse is a session's deliverable.
type DiffResponse struct {
	workspace.Diff
	Repo     string `json:"repo,omitempty"`
	Delivery string `json:"delivery,omitempty"`
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	d, x, err := s.Service.Diff(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, DiffResponse{Diff: d, Repo: x.Repo, Delivery: x.Delivery})
}

func (s *Server) accept(w http.ResponseWriter, r *http.Request) {
	var req engine.AcceptRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Accept(r.Context(), r.PathValue("id"), req, s.operator())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request) {
	x, err := s.Service.Reject(r.Context(), r.PathValue("id"), s.operator())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Service.Store.GetSession(r.Context(), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	u, err := s.Service.Store.SessionUsage(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}
