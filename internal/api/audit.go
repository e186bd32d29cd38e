package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/store"
)

func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Service.Store.GetSession(r.Context(), r.PathValue("id")); err != nil {
		s.error(w, r, err)
		return
	}
	log, err := s.Service.Store.AuditLog(r.Context(), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nonNil(log))
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request) {
	reports, err := s.Service.VerifyAudit(r.Context(), r.URL.Query().Get("session"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reports)
}

func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = audit.FormatJSONL
	}
	if format != audit.FormatJSONL && format != audit.FormatCEF {
		s.error(w, r, fmt.Errorf("%w: format %q: want jsonl or cef", store.ErrInvalid, clip(format)))
		return
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			s.error(w, r, fmt.Errorf("%w: since %q: want an RFC 3339 time such as 2026-11-30T12:00:00Z", store.ErrInvalid, clip(v)))
			return
		}
		since = t
	}
	entries, err := s.Service.Store.AuditSince(r.Context(), since, 0)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := audit.Export(w, format, "1", entries); err != nil {
		s.Logger.Warn("audit export cut short", "err", err)
	}
}

func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	cp, err := s.Service.Checkpoint(r.Context())
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(cp)
}

func (s *Server) prove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	seq, err := strconv.ParseInt(q.Get("seq"), 10, 64)
	if err != nil || seq < 1 {
		s.error(w, r, fmt.Errorf("%w: seq %q: want an entry's number (1, 2, …)", store.ErrInvalid, clip(q.Get("seq"))))
		return
	}
	var old int64
	if v := q.Get("old"); v != "" {
		if old, err = strconv.ParseInt(v, 10, 64); err != nil || old < 0 {
			s.error(w, r, fmt.Errorf("%w: old %q: want the size of an older checkpoint", store.ErrInvalid, clip(v)))
			return
		}
	}
	p, err := s.Service.Prove(r.Context(), q.Get("session"), seq, old)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) auditKey(w http.ResponseWriter, r *http.Request) {
	pub := s.Service.Sealer.Public()
	if pub == nil {
		s.error(w, r, fmt.Errorf("this server seals no audit logs: %w", store.ErrNotFound))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"algorithm": "ed25519", "publicKey": base64.StdEncoding.EncodeToString(pub)})
}
