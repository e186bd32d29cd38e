package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Console is the administration page: the caller's projects, their own
// tokens (anyone's, for a server administrator), and for administrators
// the users and the revocation of a user or a session.
type Console struct {
	Projects []identity.Membership
	Users    []identity.User
	Tokens   []identity.Token
	// TokensOf is whose tokens are listed.
	TokensOf string
	// Minted is a token just created, shown this once.
	Minted *Minted
	// Notice says what the last action did.
	Notice string
	// Slack are the caller's linked Slack accounts; SlackOn says the
	// server links them.
	Slack   []chat.Link
	SlackOn bool
}

// Minted is a new token's text, shown once.
type Minted struct {
	ID, User, Secret string
}

func (a *App) console(w http.ResponseWriter, r *http.Request) {
	a.renderConsole(w, r, http.StatusOK, nil, r.URL.Query().Get("done"))
}

func (a *App) renderConsole(w http.ResponseWriter, r *http.Request, status int, minted *Minted, notice string) {
	p := principal(r)
	c := Console{Minted: minted, Notice: notice, TokensOf: p.User}
	if u := r.URL.Query().Get("user"); u != "" && p.Admin {
		c.TokensOf = u
	}
	if minted != nil {
		c.TokensOf = minted.User
	}
	var err error
	if c.Projects, err = a.Service.Access.Projects(r.Context(), p); err != nil {
		a.problem(w, r, err)
		return
	}
	if p.Admin {
		if c.Users, err = a.Service.Access.Users(r.Context(), p); err != nil {
			a.problem(w, r, err)
			return
		}
	}
	if c.Tokens, err = a.Service.Access.Tokens(r.Context(), p, c.TokensOf); err != nil {
		a.problem(w, r, err)
		return
	}
	if c.SlackOn = a.Chat != nil; c.SlackOn {
		if c.Slack, err = a.Chat.Links(r.Context(), p); err != nil {
			a.problem(w, r, err)
			return
		}
	}
	a.render(w, r, status, "console", "Administration", c)
}

// linkSlack confirms, as the person logged in, the code a Slack app
// gave a Slack user: that Slack user acts as them from then on.
func (a *App) linkSlack(w http.ResponseWriter, r *http.Request) {
	if a.Chat == nil {
		a.problem(w, r, fmt.Errorf("%w: this server links no Slack accounts", errdefs.ErrNotFound))
		return
	}
	l, err := a.Chat.Link(r.Context(), principal(r), r.PostFormValue("code"))
	if err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin", fmt.Sprintf("Slack user %s of workspace %s is linked to you for project %s's app: what it does there is done as you", l.SlackUser, l.Team, l.Project))
}

// done returns to the console saying what was done.
func done(w http.ResponseWriter, r *http.Request, path, what string) {
	http.Redirect(w, r, path+"?done="+url.QueryEscape(what), http.StatusSeeOther)
}

func (a *App) createProject(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if err := a.Service.Access.CreateProject(r.Context(), principal(r), name); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin/projects/"+url.PathEscape(name), "project "+name+" created: add its members")
}

func (a *App) createUser(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if _, err := a.Service.Access.CreateUser(r.Context(), principal(r), name, r.PostFormValue("admin") == "true"); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin", "user "+name+" created: give them a role in a project and a token")
}

func (a *App) revokeUser(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("user")
	stopped, problems, err := a.Service.Sessions().RevokeUser(r.Context(), principal(r), name)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	msg := fmt.Sprintf("user %s revoked: their tokens are refused, %d live session(s) stopped", name, len(stopped))
	if len(problems) > 0 {
		msg += "; not stopped: " + strings.Join(problems, "; ")
	}
	done(w, r, "/admin", msg)
}

func (a *App) mintToken(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	user := strings.TrimSpace(r.PostFormValue("user"))
	if user == "" {
		user = p.User
	}
	var ttl time.Duration
	if e := strings.TrimSpace(r.PostFormValue("expires")); e != "" {
		d, err := time.ParseDuration(e)
		if err != nil {
			a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("expires %q: want a duration such as 720h", e))
			return
		}
		ttl = d
	}
	t, full, err := a.Service.Access.NewToken(r.Context(), p, user, strings.TrimSpace(r.PostFormValue("label")), ttl)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	// Rendered, not redirected: the text is shown this once and never again.
	a.renderConsole(w, r, http.StatusCreated, &Minted{ID: t.ID, User: t.User, Secret: full}, "")
}

func (a *App) revokeToken(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := a.Service.Access.RevokeToken(r.Context(), principal(r), id); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin", "token "+id+" revoked")
}

// revokeSession stops a session for good, by a manager of its project.
func (a *App) revokeSession(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.PostFormValue("session"))
	if _, err := a.sessionFor(r, id, identity.Manage); err != nil {
		a.problem(w, r, err)
		return
	}
	if err := a.Service.Sessions().Revoke(r.Context(), principal(r), id); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin", "session "+id+" revoked: it stops and its sandbox is destroyed")
}

// ProjectPage is a project's members and the policy in force, with a
// replay of a candidate policy against the calls the project recorded.
type ProjectPage struct {
	Name      string
	Members   []identity.Membership
	Roles     []identity.Role
	CanManage bool
	// Policy is the policy in force, as YAML, and its digest.
	Policy, Digest string
	// Candidate is the policy replayed (or refused), Since its window.
	Candidate, Since string
	Replay           *policy.ReplayReport
	Problem, Notice  string
	// Connections are its connections to forges (credentials never shown).
	Connections []forge.Connection
	Kinds       []forge.Kind
	// Links are the caller's own accounts linked on the connections'
	// forges, by connection; CanLink says the caller may link one.
	Links   map[string]forge.Link
	CanLink bool
}

func (a *App) project(w http.ResponseWriter, r *http.Request) {
	a.renderProject(w, r, http.StatusOK, ProjectPage{Notice: r.URL.Query().Get("done")})
}

func (a *App) renderProject(w http.ResponseWriter, r *http.Request, status int, pg ProjectPage) {
	pg.Name, pg.Roles = r.PathValue("name"), identity.Roles
	var err error
	if pg.Members, err = a.Service.Access.Members(r.Context(), principal(r), pg.Name); err != nil {
		a.problem(w, r, err)
		return
	}
	pg.CanManage = a.can(r, pg.Name, identity.Manage)
	if a.Service.Remotes != nil {
		if pg.Connections, err = a.Service.Remotes.Connections(r.Context(), principal(r), pg.Name); err != nil {
			a.problem(w, r, err)
			return
		}
		if pg.Links, err = a.Service.Remotes.Links(r.Context(), principal(r), pg.Name); err != nil {
			a.problem(w, r, err)
			return
		}
		pg.CanLink = a.can(r, pg.Name, identity.Steer)
	}
	pg.Kinds = forge.Kinds
	pol, err := a.Service.Projects().Policy(r.Context(), principal(r), pg.Name)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	pg.Policy, pg.Digest = policyYAML(pol), pol.Digest()
	if pg.Candidate == "" {
		pg.Candidate = pg.Policy
	}
	a.render(w, r, status, "project", "Project "+pg.Name, pg)
}

// policyYAML writes a policy as the YAML it is written in.
func policyYAML(p *policy.Policy) string {
	raw, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(out)
}

// managed runs h for a caller who manages the {name} project.
func (a *App) managed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if err := a.Service.Access.Allow(r.Context(), principal(r), name, identity.Manage, "project "+name); err != nil {
			a.problem(w, r, err)
			return
		}
		h(w, r)
	}
}

func (a *App) setMember(w http.ResponseWriter, r *http.Request) {
	name, user := r.PathValue("name"), strings.TrimSpace(r.PostFormValue("user"))
	role, err := identity.ParseRole(r.PostFormValue("role"))
	if err == nil {
		err = a.Service.Access.SetMember(r.Context(), principal(r), identity.Membership{Project: name, User: user, Role: role})
	}
	if err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin/projects/"+url.PathEscape(name), fmt.Sprintf("%s is %s of %s", user, role, name))
}

func (a *App) addConnection(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	req := wire.ConnectionRequest{Name: strings.TrimSpace(r.PostFormValue("connection")), Kind: r.PostFormValue("kind"), URL: strings.TrimSpace(r.PostFormValue("url")),
		Repositories: strings.Fields(r.PostFormValue("repositories")), Username: strings.TrimSpace(r.PostFormValue("username")), Credential: r.PostFormValue("credential")}
	c, err := a.Service.Remotes.AddConnection(r.Context(), principal(r), name, req)
	a.typed(w, r, err, func() string {
		return fmt.Sprintf("connection %s added: %s grants %s (its credential is kept encrypted and never shown again)", c.Name, c.URL, strings.Join(c.Repositories, ", "))
	})
}

// typed answers a form of the project's page on what was typed in it: a
// refusal of that is the page again saying why (400), another failure its
// problem page, and success the page with note's notice.
func (a *App) typed(w http.ResponseWriter, r *http.Request, err error, note func() string) {
	switch {
	case errors.Is(err, errdefs.ErrInvalid) || errors.Is(err, errdefs.ErrConflict):
		a.renderProject(w, r, http.StatusBadRequest, ProjectPage{Problem: err.Error()})
	case err != nil:
		a.problem(w, r, err)
	default:
		done(w, r, "/admin/projects/"+url.PathEscape(r.PathValue("name")), note())
	}
}

func (a *App) revokeConnection(w http.ResponseWriter, r *http.Request) {
	name, conn := r.PathValue("name"), r.PathValue("connection")
	if _, err := a.Service.Remotes.RevokeConnection(r.Context(), principal(r), name, conn); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin/projects/"+url.PathEscape(name), "connection "+conn+" revoked: its credential is deleted, and nothing more is fetched with it")
}

// linkForge links the caller's own account on a connection's forge: the
// pull requests of what they accept there are opened as them.
func (a *App) linkForge(w http.ResponseWriter, r *http.Request) {
	name, conn := r.PathValue("name"), r.PathValue("connection")
	l, err := a.Service.Remotes.LinkForge(r.Context(), principal(r), name, conn, wire.LinkRequest{Credential: r.PostFormValue("credential")})
	a.typed(w, r, err, func() string {
		return fmt.Sprintf("linked: pull requests of what you accept through connection %s are opened as %s on %s (your token is kept encrypted and never shown again)", l.Connection, l.Login, l.URL)
	})
}

func (a *App) unlinkForge(w http.ResponseWriter, r *http.Request) {
	name, conn := r.PathValue("name"), r.PathValue("connection")
	if err := a.Service.Remotes.UnlinkForge(r.Context(), principal(r), name, conn); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin/projects/"+url.PathEscape(name), "unlinked from connection "+conn+": your token there is deleted, and its pull requests are opened with the connection's credential again")
}

func (a *App) removeMember(w http.ResponseWriter, r *http.Request) {
	name, user := r.PathValue("name"), r.PathValue("user")
	if err := a.Service.Access.RemoveMember(r.Context(), principal(r), name, user); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin/projects/"+url.PathEscape(name), user+" is no longer a member of "+name)
}

func (a *App) setPolicy(w http.ResponseWriter, r *http.Request) {
	text := r.PostFormValue("policy")
	p, err := a.Service.Projects().SetPolicy(r.Context(), principal(r), r.PathValue("name"), []byte(text))
	if errors.Is(err, errdefs.ErrInvalid) {
		// The text stays in the form, with what is wrong with it.
		a.renderProject(w, r, http.StatusBadRequest, ProjectPage{Candidate: text, Problem: err.Error()})
		return
	}
	if err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/admin/projects/"+url.PathEscape(r.PathValue("name")), "policy "+shortID(p.Digest())+" in force: sessions started from now on pin it")
}

// replay judges the project's recorded calls under the candidate policy.
func (a *App) replay(w http.ResponseWriter, r *http.Request) {
	pg := ProjectPage{Candidate: r.PostFormValue("policy"), Since: strings.TrimSpace(r.PostFormValue("since"))}
	since, err := policy.ParseSince(pg.Since, time.Now())
	if err == nil {
		var rep policy.ReplayReport
		if rep, err = a.Service.Projects().ReplayPolicy(r.Context(), principal(r), r.PathValue("name"), []byte(pg.Candidate), since, 3); err == nil {
			pg.Replay = &rep
		} else if !errors.Is(err, errdefs.ErrInvalid) {
			a.problem(w, r, err)
			return
		}
	}
	if err != nil {
		pg.Problem = err.Error()
		a.renderProject(w, r, http.StatusBadRequest, pg)
		return
	}
	a.renderProject(w, r, http.StatusOK, pg)
}
