package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Slack takes the Slack deliveries of projects' apps (package slackbot).
type Slack interface {
	Deliver(ctx context.Context, project, kind string, h http.Header, body []byte) ([]byte, error)
}

// slack takes a delivery of a project's Slack app: an event (JSON) or an
// interaction (a form), signed with the app's signing secret.
func (s *Server) slack(w http.ResponseWriter, r *http.Request) {
	if s.Slack == nil {
		s.error(w, r, fmt.Errorf("%w: this server takes no Slack deliveries", errdefs.ErrNotFound))
		return
	}
	body, err := readBody(w, r, []string{"application/json", "application/x-www-form-urlencoded"})
	if err != nil {
		s.error(w, r, err)
		return
	}
	out, err := s.Slack.Deliver(r.Context(), r.PathValue("project"), r.PathValue("kind"), r.Header, body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if out == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

func (s *Server) slackApp(w http.ResponseWriter, r *http.Request) {
	a, err := s.Chat.App(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) setSlackApp(w http.ResponseWriter, r *http.Request) {
	var in wire.SlackAppRequest
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	a, err := s.Chat.Configure(r.Context(), principal(r), r.PathValue("name"), in)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) removeSlackApp(w http.ResponseWriter, r *http.Request) {
	if err := s.Chat.Remove(r.Context(), principal(r), r.PathValue("name")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) linkSlack(w http.ResponseWriter, r *http.Request) {
	var in wire.SlackLinkRequest
	if err := decode(w, r, &in); err != nil {
		s.error(w, r, err)
		return
	}
	l, err := s.Chat.Link(r.Context(), principal(r), in.Code)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, l)
}

func (s *Server) slackLinks(w http.ResponseWriter, r *http.Request) {
	ls, err := s.Chat.Links(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"links": nonNil(ls)})
}

func (s *Server) unlinkSlack(w http.ResponseWriter, r *http.Request) {
	l := chat.Link{Project: r.PathValue("project"), Team: r.PathValue("team"), SlackUser: r.PathValue("user")}
	if err := s.Chat.Unlink(r.Context(), principal(r), l); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
