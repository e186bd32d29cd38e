package api

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
)

// events serves the transcript: as JSON, or as an SSE stream when the
// client accepts text/event-stream. The stream resumes after Last-Event-ID
// (or ?after=), subscribes before it reads so nothing falls between, and
// ends when the session ends or the client goes away.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	t, err := s.Service.Sessions().Transcript(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	after := int64(0)
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.error(w, r, fmt.Errorf("%w: event position %q: want a non-negative number", errdefs.ErrInvalid, v))
			return
		}
		after = n
	}
	if !wantsStream(r) {
		list, err := t.After(r.Context(), after, 0)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"events": nonNil(list)})
		return
	}
	ch, cancel := t.Subscribe()
	defer cancel()
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	// Polling backs up the in-process notification, for writers in other
	// processes (workers against an external Temporal cluster).
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	checked := time.Now()
	for {
		if time.Since(checked) >= recheckEvery {
			// Revocation reaches an open stream: the caller is checked
			// again every few seconds, and the stream ends without them.
			if _, ok := s.still(r, onSession(identity.Read)); !ok {
				fmt.Fprint(w, "event: end\ndata: {\"reason\":\"your access to this session ended (token or user revoked, or role removed)\"}\n\n")
				if flusher != nil {
					flusher.Flush()
				}
				return
			}
			checked = time.Now()
		}
		list, err := t.After(r.Context(), after, 500)
		if err != nil {
			return
		}
		for _, e := range list {
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: ", e.Seq, e.Kind)
			b, _ := json.Marshal(e)
			w.Write(b)
			fmt.Fprint(w, "\n\n")
			after = e.Seq
			if e.Terminal() {
				fmt.Fprint(w, "event: end\ndata: {}\n\n")
				if flusher != nil {
					flusher.Flush()
				}
				return
			}
		}
		if flusher != nil && len(list) > 0 {
			flusher.Flush()
		}
		if len(list) == 500 {
			continue
		}
		if len(list) == 0 {
			// Resumed at (or past) the end of a session that has ended: its
			// terminal event was already sent, so end at once.
			if ended, err := t.Ended(r.Context()); err == nil && ended {
				if more, err := t.After(r.Context(), after, 1); err == nil && len(more) == 0 {
					fmt.Fprint(w, "event: end\ndata: {}\n\n")
					if flusher != nil {
						flusher.Flush()
					}
					return
				}
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-ch:
		case <-poll.C:
		}
	}
}

// wantsStream reports whether the client accepts text/event-stream (in
// any position of its Accept list, with any parameters but q=0).
func wantsStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == "text/event-stream" && strings.TrimSpace(params["q"]) != "0" {
				return true
			}
		}
	}
	return false
}
