package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

// NewPage is the form that starts a session: the projects the caller may
// start in and their agents. Key makes the form's submission idempotent
// (a double click starts one session).
type NewPage struct {
	Projects                               []string
	Agents                                 []spec.Record
	Key                                    string
	Project, Agent, Repo, Message, Problem string
}

func (a *App) newPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.renderNew(w, r, http.StatusOK, NewPage{Project: q.Get("project"), Agent: q.Get("agent")})
}

func (a *App) renderNew(w http.ResponseWriter, r *http.Request, status int, n NewPage) {
	ms, err := a.Service.Access.Projects(r.Context(), principal(r))
	if err != nil {
		a.problem(w, r, err)
		return
	}
	for _, m := range ms {
		if !m.Role.Can(identity.Start) {
			continue
		}
		n.Projects = append(n.Projects, m.Project)
		agents, err := a.Service.Projects().Agents(r.Context(), principal(r), m.Project)
		if err != nil {
			a.problem(w, r, err)
			return
		}
		n.Agents = append(n.Agents, agents...)
	}
	if n.Key == "" {
		n.Key = random()
	}
	a.render(w, r, status, "new", "Start a session", n)
}

func (a *App) start(w http.ResponseWriter, r *http.Request) {
	n := NewPage{Project: r.PostFormValue("project"), Agent: r.PostFormValue("agent"), Repo: strings.TrimSpace(r.PostFormValue("repo")),
		Message: strings.TrimSpace(r.PostFormValue("message")), Key: r.PostFormValue("key")}
	if n.Project == "" {
		n.Project = spec.DefaultProject // as the API does: the project checked is the one started in
	}
	// A project the caller may not start in is a page of its own, not a
	// problem with the form (CreateSession checks it again).
	if err := a.Service.Access.Allow(r.Context(), principal(r), n.Project, identity.Start, "project "+n.Project); err != nil {
		a.problem(w, r, err)
		return
	}
	x, err := a.Service.Sessions().Create(r.Context(), principal(r), wire.CreateRequest{Project: n.Project, Agent: n.Agent, Repo: n.Repo, Message: n.Message,
		IdempotencyKey: "web/" + n.Key})
	if err != nil && x.ID == "" {
		if status, _ := api.StatusOf(err); status < 500 {
			// The form keeps what was typed, with what is wrong with it.
			n.Problem = err.Error()
			a.renderNew(w, r, status, n)
			return
		}
		a.problem(w, r, err)
		return
	}
	if err != nil {
		a.Logger.Warn("session recorded but its workflow did not start yet", "session", x.ID, "err", err)
	}
	http.Redirect(w, r, "/sessions/"+url.PathEscape(x.ID), http.StatusSeeOther)
}
