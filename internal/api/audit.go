package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/wire"
)

func (s *Server) auditLog(w http.ResponseWriter, r *http.Request) {
	content, err := boolParam(r, "content")
	if err != nil {
		s.error(w, r, err)
		return
	}
	log, err := s.Service.Audit.AuditLog(r.Context(), principal(r), r.PathValue("id"), content)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nonNil(log))
}

func (s *Server) contentRetention(w http.ResponseWriter, r *http.Request) {
	d, err := s.Service.Audit.ContentRetention(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Retention{Content: d.String()})
}

func (s *Server) setContentRetention(w http.ResponseWriter, r *http.Request) {
	var in wire.Retention
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	d, err := time.ParseDuration(in.Content)
	if err != nil {
		s.error(w, r, fmt.Errorf("%w: content %q: want a duration such as 720h (0s: keep none)", errdefs.ErrInvalid, clip.String(in.Content, 40)))
		return
	}
	if err := s.Service.Audit.SetContentRetention(r.Context(), principal(r), r.PathValue("name"), d); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Retention{Content: d.String()})
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request) {
	reports, err := s.Service.Audit.VerifyAudit(r.Context(), principal(r), r.URL.Query().Get("session"))
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
		s.error(w, r, fmt.Errorf("%w: format %q: want jsonl or cef", errdefs.ErrInvalid, clip.String(format, 40)))
		return
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			s.error(w, r, fmt.Errorf("%w: since %q: want an RFC 3339 time such as 2026-11-30T12:00:00Z", errdefs.ErrInvalid, clip.String(v, 40)))
			return
		}
		since = t
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		s.error(w, r, err)
		return
	}
	scope0, scoped0, err := s.Service.Access.Readable(r.Context(), principal(r), identity.Audit)
	if err != nil {
		s.error(w, r, err)
		return
	}
	// Pages in the order written (the Merkle tree's leaf order), then, when
	// following, what is written next, checked for every second.
	cursor := int64(-1)
	for started := false; ; started = true {
		entries, next, full, err := s.Service.Audit.AuditAfter(r.Context(), principal(r), cursor, exportPage)
		if err != nil {
			if !started {
				s.error(w, r, err)
			} else if r.Context().Err() == nil {
				s.Logger.Warn("audit export cut short", "err", err)
			}
			return
		}
		if !started {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
		}
		cursor = next
		kept := entries[:0:0]
		for _, e := range entries {
			if e.Kind != "unreadable" && !e.Time.Before(since) {
				kept = append(kept, e)
			}
		}
		if err := audit.Export(w, format, "1", kept); err != nil {
			s.Logger.Warn("audit export cut short", "err", err)
			return
		}
		if full {
			continue
		}
		if !follow {
			return
		}
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(time.Second):
		}
		// Revocation reaches a followed export: the caller and the
		// projects they may audit are checked again before each read; it
		// ends when they lost any of them (a new export shows what they
		// may audit now).
		now, ok := s.still(r, caller)
		if !ok {
			return
		}
		within, scoped, err := s.Service.Access.Readable(now.Context(), principal(now), identity.Audit)
		if err != nil || shrank(scope0, scoped0, within, scoped) {
			return
		}
	}
}

// shrank says a caller's scope lost something: they were unscoped (an
// administrator) and are not now, or a project they had is gone.
func shrank(before []string, scopedBefore bool, now []string, scopedNow bool) bool {
	if !scopedNow {
		return false
	}
	if !scopedBefore {
		return true
	}
	for _, p := range before {
		if !slices.Contains(now, p) {
			return true
		}
	}
	return false
}

// exportPage is how many entries an export reads at a time.
const exportPage = 1000

func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	cp, err := s.Service.Audit.Checkpoint(r.Context(), principal(r))
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
		s.error(w, r, fmt.Errorf("%w: seq %q: want an entry's number (1, 2, …)", errdefs.ErrInvalid, clip.String(q.Get("seq"), 40)))
		return
	}
	var old int64
	if v := q.Get("old"); v != "" {
		if old, err = strconv.ParseInt(v, 10, 64); err != nil || old < 0 {
			s.error(w, r, fmt.Errorf("%w: old %q: want the size of an older checkpoint", errdefs.ErrInvalid, clip.String(v, 40)))
			return
		}
	}
	p, err := s.Service.Audit.Prove(r.Context(), principal(r), q.Get("session"), seq, old)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) auditKey(w http.ResponseWriter, r *http.Request) {
	pub := s.Service.Sealer.Public()
	if pub == nil {
		s.error(w, r, fmt.Errorf("this server seals no audit logs: %w", errdefs.ErrNotFound))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"algorithm": "ed25519", "publicKey": base64.StdEncoding.EncodeToString(pub)})
}

func (s *Server) accessLog(w http.ResponseWriter, r *http.Request) {
	log, err := s.Service.Access.AccessLog(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, nonNil(log))
}
