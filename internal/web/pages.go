package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/shellcheck"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

func (a *App) loginPage(w http.ResponseWriter, r *http.Request) {
	msg := ""
	if r.URL.Query().Get("expired") != "" {
		msg = "Your login is no longer valid (expired or revoked): log in again."
	}
	a.render(w, r, http.StatusOK, "login", "Log in", LoginPage{msg, localPath(r.URL.Query().Get("next")), a.directory()})
}

// LoginPage is the login page, and the page a refusal is shown on.
type LoginPage struct {
	Message, Next string
	// Directory offers login through the organization's directory.
	Directory bool
}

// localPath keeps a redirect on this site: a path of its own, nothing a
// browser could read as another host (browsers drop tabs and newlines and
// read "\\" as "/", so "/\t/evil" would be "//evil").
func localPath(p string) string {
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "/"
	}
	return p
}

func (a *App) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		a.fail(w, r, http.StatusBadRequest, "the form could not be read")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		a.fail(w, r, http.StatusForbidden, "a login from another site was refused")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	t, full, err := a.Service.Access.OpenWebSession(r.Context(), api.Source(r), token)
	var throttled *errdefs.ThrottledError
	if errors.As(err, &throttled) {
		w.Header().Set("Retry-After", strconv.Itoa(int(throttled.Wait.Seconds())+1))
		a.render(w, r, http.StatusTooManyRequests, "login", "Log in", LoginPage{
			"Too many failed logins from your address: " + throttled.Error() + ".", localPath(r.PostFormValue("next")), a.directory()})
		return
	}
	if errors.Is(err, errdefs.ErrUnauthenticated) {
		a.render(w, r, http.StatusUnauthorized, "login", "Log in", LoginPage{
			"That token is not valid (unknown, expired or revoked). Create one with `paddock tokens create`, or use `paddock login`.", localPath(r.PostFormValue("next")), a.directory()})
		return
	}
	if err != nil {
		a.problem(w, r, err)
		return
	}
	setCookie(w, r, t, full)
	http.Redirect(w, r, localPath(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the web login: its token is revoked, not only forgotten by
// this browser.
func (a *App) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(api.TokenCookie); err == nil {
		if err := a.Service.Access.CloseWebSession(r.Context(), c.Value); err != nil {
			a.problem(w, r, err)
			return
		}
	}
	clearCookie(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// Row is one session in the list.
type Row struct {
	session.Session
	Park    string
	CostUSD float64
	// Needs says what the caller is needed for here ("" when nothing):
	// calls to decide, their own session waiting on them.
	Needs string
	// Badge is the state shown: the status, or what is more telling
	// (waiting for a decision, turn failed, held, archived).
	Badge, BadgeClass string
}

// List is the sessions page.
type List struct {
	Rows                          []Row
	Status, Agent, Project, Query string
	Sort                          string
	Parked, Archived              bool
	Statuses                      []session.Status
	Projects                      []string
	Fragment                      bool
	Total, NeedMe                 int
}

// sorts are the list's orders: needs me first (the default), then by
// age, cost or status.
var sorts = []string{"needs", "newest", "oldest", "cost", "status"}

func (a *App) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l := List{Status: q.Get("status"), Agent: q.Get("agent"), Project: q.Get("project"), Query: strings.TrimSpace(q.Get("q")), Parked: q.Get("parked") == "true",
		Archived: q.Get("archived") == "true", Fragment: q.Get("fragment") == "list", Sort: cmp.Or(q.Get("sort"), "needs"),
		Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting, session.StatusFailed, session.StatusStopped}}
	f := session.Filter{Agent: l.Agent, Project: l.Project, Status: session.Status(l.Status), IncludeArchived: l.Archived, Limit: 500}
	if f.Status != "" && !f.Status.Valid() {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("there is no status %q: choose one of the list's (queued, running, awaiting, failed, stopped)", clip.String(l.Status, 40)))
		return
	}
	if !slices.Contains(sorts, l.Sort) {
		a.fail(w, r, http.StatusBadRequest, fmt.Sprintf("the list cannot be sorted by %q: choose needs, newest, oldest, cost or status", clip.String(l.Sort, 40)))
		return
	}
	if l.Project != "" {
		if err := identity.CheckName(identity.ProjectName, l.Project); err != nil {
			a.problem(w, r, err)
			return
		}
	}
	if ms, err := a.Service.Access.Projects(r.Context(), principal(r)); err == nil {
		for _, m := range ms {
			if !slices.Contains(l.Projects, m.Project) {
				l.Projects = append(l.Projects, m.Project)
			}
		}
	}
	// Calls the caller may decide, by session: what they are needed for.
	deciding := map[string]int{}
	if aps, err := a.Service.Gates().Approvals(r.Context(), principal(r), identity.Approve, session.ApprovalFilter{Status: session.ApprovalPending}); err == nil {
		for _, ap := range aps {
			deciding[ap.SessionID]++
		}
	}
	parked, err := a.Service.Gates().Parked(r.Context(), principal(r), identity.Read, f)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	waits := map[string]string{}
	for _, p := range parked {
		waits[p.Session.ID] = p.Reason
	}
	list, err := a.Service.Sessions().List(r.Context(), principal(r), f)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	costs, err := a.Service.Sessions().Costs(r.Context(), principal(r), list)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	needle := strings.ToLower(l.Query)
	for _, x := range list {
		if l.Parked && waits[x.ID] == "" {
			continue
		}
		if needle != "" && !strings.Contains(strings.ToLower(x.DisplayTitle+" "+x.ID+" "+x.Agent+" "+x.CreatedBy.ID), needle) {
			continue
		}
		row := Row{Session: x, Park: waits[x.ID], CostUSD: costs[x.ID], Badge: string(x.Status), BadgeClass: "status-" + string(x.Status)}
		mine := x.CreatedBy.Requester().Same(sender(r))
		switch n := deciding[x.ID]; {
		case n > 0:
			row.Needs = fmt.Sprintf("%d %s to decide", n, plural(n, "call", "calls"))
		case mine && row.Park == string(bound.AwaitingAnswer):
			row.Needs = "your answer to its question"
		case mine && row.Park == string(bound.AwaitingExtension):
			row.Needs = "your decision on more budget"
		case mine && (row.Park == string(bound.AwaitingCredentials) || row.Park == string(bound.AwaitingIdentity)):
			row.Needs = "your " + strings.TrimPrefix(row.Park, "awaiting_")
		case mine && x.Status == session.StatusAwaiting && row.Park == "" && !x.Held():
			row.Needs = "your next message, or its review"
		}
		switch {
		case x.ArchivedAt != nil:
			row.Badge, row.BadgeClass = "archived", "badge-archived"
		case x.Held():
			row.Badge, row.BadgeClass = "held", "badge-held"
		case deciding[x.ID] > 0 || row.Park == string(bound.AwaitingApproval):
			row.Badge, row.BadgeClass = "waiting for a decision", "badge-decision"
		case row.Park != "":
			row.Badge, row.BadgeClass = "waiting", "badge-waiting"
		case x.Status == session.StatusAwaiting && x.FailureReason != "":
			row.Badge, row.BadgeClass = "turn failed", "status-failed"
		}
		if row.Needs != "" {
			l.NeedMe++
		}
		l.Rows = append(l.Rows, row)
	}
	sortRows(l.Rows, l.Sort)
	l.Total = len(l.Rows)
	if l.Fragment {
		t := a.pages["sessions"]
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := t.ExecuteTemplate(w, "list", view{CSRF: a.csrf(r), User: principal(r), Data: l}); err != nil {
			a.Logger.Error("web list", "err", err)
		}
		return
	}
	a.render(w, r, http.StatusOK, "sessions", "Sessions", l)
}

// sortRows orders the list: by default what needs the caller first
// (newest first within), else as asked.
func sortRows(rows []Row, by string) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch by {
		case "oldest":
			return a.CreatedAt.Compare(b.CreatedAt)
		case "cost":
			return cmp.Compare(b.CostUSD, a.CostUSD)
		case "status":
			return cmp.Compare(a.Badge, b.Badge)
		case "needs":
			if (a.Needs != "") != (b.Needs != "") {
				if a.Needs != "" {
					return -1
				}
				return 1
			}
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Pending is a call waiting for a decision, with the analyzer's verdict on
// each piece of a shell command under the session's pinned policy.
type Pending struct {
	session.Approval
	Pieces []shellcheck.Piece
	// Chain are the sessions whose agents started the approval's session,
	// the first first (none: a person or a trigger started it), and Task
	// what it was given to do.
	Chain []string
	Task  string
}

// pending explains approvals: a command's pieces, as the gate saw them.
func (a *App) pending(r *http.Request, aps []session.Approval) []Pending {
	out := make([]Pending, len(aps))
	sessions := map[string]session.Session{}
	get := func(id string) (session.Session, bool) {
		x, ok := sessions[id]
		if !ok {
			var err error
			if x, err = a.Service.Sessions().Get(r.Context(), principal(r), id); err != nil {
				return x, false
			}
			sessions[id] = x
		}
		return x, true
	}
	for i, ap := range aps {
		out[i].Approval = ap
		x, ok := get(ap.SessionID)
		if !ok {
			continue
		}
		// Who started it, up to a person: a delegated session's request
		// names its chain and its task.
		for up, n := x, 0; up.StartedBy() != "" && n < 4; n++ {
			out[i].Chain = append([]string{up.StartedBy()}, out[i].Chain...)
			if up, ok = get(up.StartedBy()); !ok {
				break
			}
		}
		if len(out[i].Chain) > 0 {
			out[i].Task = clip.String(x.Input, 300)
		}
		if ap.Tool != policy.ShellTool {
			continue
		}
		if p, err := policy.Pinned(x.Policy); err == nil {
			out[i].Pieces = p.Evaluate(ap.Tool, ap.Args).Pieces
		}
	}
	return out
}

// Page is the session page.
type Page struct {
	Session   session.Session
	Question  *session.Question
	Approvals []Pending
	Parks     []session.Park
	CanSteer  bool
	CanDecide bool
	CanAudit  bool
	// Seen is the last event when the page was rendered.
	Seen int64
	// Model is the agent's model; Usage and Budget what the session used
	// of what it may.
	Model  string
	Usage  session.SessionUsage
	Budget engine.BudgetUse
	// Parent is the session whose agent started this one (Delegated: by
	// a delegate call, else by sessions_spawn); Started the sessions this
	// one's agent started.
	Parent    string
	Delegated bool
	Started   []session.Session
	// Bindings are the pull requests it is bound to.
	Bindings []session.Binding
}

// sessionFor loads session id for the caller, checking action a.
func (a *App) sessionFor(r *http.Request, id string, act identity.Action) (session.Session, error) {
	return a.Service.Sessions().For(r.Context(), principal(r), id, act)
}

func (a *App) can(r *http.Request, project string, act identity.Action) bool {
	return a.Service.Access.Allow(r.Context(), principal(r), project, act, "") == nil
}

func (a *App) session(w http.ResponseWriter, r *http.Request) {
	x, err := a.sessionFor(r, r.PathValue("id"), identity.Read)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	p := Page{Session: x, CanSteer: a.can(r, x.Project, identity.Steer), CanDecide: a.can(r, x.Project, identity.Approve),
		CanAudit: a.can(r, x.Project, identity.Audit)}
	aps, _ := a.Service.Gates().Approvals(r.Context(), principal(r), identity.Read, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
	p.Approvals = a.pending(r, aps)
	p.Parks, _ = a.Service.Gates().Parks(r.Context(), principal(r), x.ID, true)
	p.Question, _ = a.Service.Sessions().OpenQuestion(r.Context(), principal(r), x.ID)
	p.Usage, _ = a.Service.Sessions().Usage(r.Context(), principal(r), x.ID)
	p.Budget, _ = a.Service.Gates().Budget(r.Context(), principal(r), x.ID)
	p.Parent = x.StartedBy()
	parent, _ := x.Delegated()
	p.Delegated = parent != ""
	p.Started, _ = a.Service.Sessions().Started(r.Context(), principal(r), x.ID)
	if a.Service.Remotes != nil {
		p.Bindings, _ = a.Service.Remotes.Bindings(r.Context(), principal(r), x.ID)
	}
	var sp spec.Agent
	if json.Unmarshal(x.AgentSpec, &sp) == nil {
		p.Model = sp.Model
	}
	if t, err := a.Service.Sessions().Transcript(r.Context(), principal(r), x.ID); err == nil {
		if last, err := t.After(r.Context(), 0, 0); err == nil && len(last) > 0 {
			p.Seen = last[len(last)-1].Seq
		}
	}
	if r.URL.Query().Get("fragment") == "controls" {
		// What waits on a person now, for the page to swap in live.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := a.pages["session"].ExecuteTemplate(w, "controls", view{CSRF: a.csrf(r), User: principal(r), Data: p}); err != nil {
			a.Logger.Error("web controls", "err", err)
		}
		return
	}
	a.render(w, r, http.StatusOK, "session", x.DisplayTitle, p)
}

func (a *App) back(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/sessions/"+url.PathEscape(r.PathValue("id")), http.StatusSeeOther)
}

func (a *App) send(w http.ResponseWriter, r *http.Request, kind session.CommandKind, payload any) {
	if _, err := a.sessionFor(r, r.PathValue("id"), identity.Steer); err != nil {
		a.problem(w, r, err)
		return
	}
	data, _ := json.Marshal(payload)
	if _, err := a.Service.Sessions().Send(r.Context(), principal(r), r.PathValue("id"), wire.SendRequest{Kind: kind, Payload: data}); err != nil {
		a.problem(w, r, err)
		return
	}
	a.back(w, r)
}

// steered runs act on the {id} session (the use case checks that the
// caller may steer it), then returns to its page.
func (a *App) steered(act func(r *http.Request, id string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := act(r, r.PathValue("id")); err != nil {
			a.problem(w, r, err)
			return
		}
		a.back(w, r)
	}
}

// decided runs act on the {id} session (the use case checks that the
// caller may approve in its project), then returns to the inbox.
func (a *App) decided(act func(r *http.Request, id string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := act(r, r.PathValue("id")); err != nil {
			a.problem(w, r, err)
			return
		}
		http.Redirect(w, r, localPath(cmp.Or(r.PostFormValue("next"), "/inbox")), http.StatusSeeOther)
	}
}

// DiffPage is a session's deliverable as a person reviews it (redacted).
type DiffPage struct {
	Session  session.Session
	Diff     session.Diff
	Review   Review
	Problem  string
	CanSteer bool
	// Notice says where the last acceptance went.
	Notice string
	// Local says the repository of origin is a directory on this server,
	// where an accepted diff can be delivered as a branch.
	Local bool
	// Confirm asks whether to reject (the confirmation page).
	Confirm bool
}

// viewCookie remembers the layout a person last chose for diffs.
const viewCookie = "paddock_diff_view"

// diffView is the layout of a review: the one the address names (then
// remembered for the next review), else the one last chosen.
func diffView(w http.ResponseWriter, r *http.Request) string {
	switch v := r.URL.Query().Get("view"); v {
	case "split", "unified":
		http.SetCookie(w, &http.Cookie{Name: viewCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure(r), MaxAge: 365 * 24 * 3600})
		return v
	}
	if c, err := r.Cookie(viewCookie); err == nil && c.Value == "split" {
		return "split"
	}
	return "unified"
}

func (a *App) diff(w http.ResponseWriter, r *http.Request) {
	p, ok := a.diffPage(w, r)
	if !ok {
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p.Review = layout(p.Diff, page, diffView(w, r) == "split")
	a.render(w, r, http.StatusOK, "diff", "Changes of "+p.Session.DisplayTitle, p)
}

// diffPage reads what every view of the diff shows.
func (a *App) diffPage(w http.ResponseWriter, r *http.Request) (DiffPage, bool) {
	x, err := a.sessionFor(r, r.PathValue("id"), identity.Read)
	if err != nil {
		a.problem(w, r, err)
		return DiffPage{}, false
	}
	p := DiffPage{Session: x, CanSteer: a.can(r, x.Project, identity.Steer), Notice: r.URL.Query().Get("done")}
	if fi, err := os.Stat(x.Repo); err == nil && fi.IsDir() {
		p.Local = true
	}
	if p.Diff, _, err = a.Service.Review().Diff(r.Context(), principal(r), x.ID); err != nil {
		p.Problem = err.Error()
	}
	return p, true
}

// confirmReject asks before discarding a session's changes.
func (a *App) confirmReject(w http.ResponseWriter, r *http.Request) {
	p, ok := a.diffPage(w, r)
	if !ok {
		return
	}
	p.Confirm = true
	p.Review = layout(p.Diff, 1, false)
	a.render(w, r, http.StatusOK, "reject", "Reject the changes of "+p.Session.DisplayTitle, p)
}

// reject discards the session's changes, then says so on the review.
func (a *App) reject(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := a.Service.Review().Reject(r.Context(), principal(r), id); err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/sessions/"+url.PathEscape(id)+"/diff", "rejected: the working copy's changes were discarded; the session stays open for more work")
}

// rawPatch downloads the whole patch, as reviewed (redacted).
func (a *App) rawPatch(w http.ResponseWriter, r *http.Request) {
	p, ok := a.diffPage(w, r)
	if !ok {
		return
	}
	if p.Problem != "" {
		a.fail(w, r, http.StatusConflict, p.Problem)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="paddock-%s.patch"`, p.Session.ID))
	_, _ = w.Write([]byte(p.Diff.Patch))
}

// message sends the composer's message with the files picked or dropped
// on it, each uploaded to the session's project first.
func (a *App) message(w http.ResponseWriter, r *http.Request) {
	text := strings.TrimSpace(r.PostFormValue("message"))
	if text == "" {
		a.back(w, r)
		return
	}
	p := session.MessagePayload{Message: text}
	if r.MultipartForm != nil && len(r.MultipartForm.File["attach"]) > 0 {
		x, err := a.sessionFor(r, r.PathValue("id"), identity.Steer)
		if err != nil {
			a.problem(w, r, err)
			return
		}
		for _, fh := range r.MultipartForm.File["attach"] {
			data, err := readPart(fh)
			if err == nil {
				var up session.Attachment
				up, err = a.Service.Attachments.Upload(r.Context(), principal(r), x.Project, fh.Filename, data)
				p.Attachments = append(p.Attachments, session.AttachmentRef{ID: up.ID})
			}
			if err != nil {
				a.problem(w, r, err)
				return
			}
		}
	}
	a.send(w, r, session.KindMessage, p)
}

// readPart reads an uploaded file of a form.
func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (a *App) stop(w http.ResponseWriter, r *http.Request) {
	a.send(w, r, session.KindStop, session.StopPayload{Reason: r.PostFormValue("reason"), Handoff: r.PostFormValue("handoff")})
}

func (a *App) interrupt(w http.ResponseWriter, r *http.Request) {
	a.send(w, r, session.KindInterrupt, session.InterruptPayload{Reason: "interrupted from the web app"})
}

func (a *App) answer(w http.ResponseWriter, r *http.Request) {
	p := session.AnswerPayload{ToolCallID: r.PostFormValue("toolCallId"), Answers: map[string]string{}, Response: strings.TrimSpace(r.PostFormValue("response"))}
	for k, v := range r.PostForm {
		if id, ok := strings.CutPrefix(k, "q."); ok && len(v) > 0 && v[0] != "" {
			p.Answers[id] = v[0]
		}
	}
	a.send(w, r, session.KindAnswer, p)
}

// Inbox is what waits on the caller.
type Inbox struct {
	Approvals []Pending
	Parked    []wire.Parked
	// Requests wait on the caller as the requester of their sessions:
	// credentials to give, an identity to choose.
	Requests []Request
}

// Request is a session of the caller's waiting for their credentials or
// their choice of identity.
type Request struct {
	wire.Parked
	// Credentials names what the agent asks for.
	Credentials []string
}

func (a *App) inbox(w http.ResponseWriter, r *http.Request) {
	var in Inbox
	aps, err := a.Service.Gates().Approvals(r.Context(), principal(r), identity.Approve, session.ApprovalFilter{Status: session.ApprovalPending})
	if err != nil {
		a.problem(w, r, err)
		return
	}
	in.Approvals = a.pending(r, aps)
	parked, err := a.Service.Gates().Parked(r.Context(), principal(r), identity.Approve, session.Filter{})
	if err != nil {
		a.problem(w, r, err)
		return
	}
	for _, p := range parked {
		if !slices.ContainsFunc(in.Approvals, func(ap Pending) bool { return ap.SessionID == p.Session.ID }) && !own(p) {
			in.Parked = append(in.Parked, p)
		}
	}
	if in.Requests, err = a.requests(r); err != nil {
		a.problem(w, r, err)
		return
	}
	if r.URL.Query().Get("fragment") == "inbox" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := a.pages["inbox"].ExecuteTemplate(w, "inbox", view{Title: "Inbox", CSRF: a.csrf(r), User: principal(r), Data: in}); err != nil {
			a.Logger.Error("web inbox", "err", err)
		}
		return
	}
	a.render(w, r, http.StatusOK, "inbox", "Inbox", in)
}

// own says a park waits on the session's requester alone.
func own(p wire.Parked) bool {
	return p.Reason == string(bound.AwaitingCredentials) || p.Reason == string(bound.AwaitingIdentity)
}

// requests are the caller's own sessions waiting for them at the door.
func (a *App) requests(r *http.Request) ([]Request, error) {
	parked, err := a.Service.Gates().Parked(r.Context(), principal(r), identity.Read, session.Filter{})
	if err != nil {
		return nil, err
	}
	me := sender(r)
	var out []Request
	for _, p := range parked {
		if !own(p) || !p.Session.CreatedBy.Requester().Same(me) {
			continue
		}
		var sp spec.Agent
		_ = json.Unmarshal(p.Session.AgentSpec, &sp)
		out = append(out, Request{Parked: p, Credentials: sp.Environment.Credentials})
	}
	return out, nil
}

func (a *App) credentials(w http.ResponseWriter, r *http.Request) {
	values := map[string]string{}
	for k, v := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "cred."); ok && len(v) > 0 {
			values[name] = v[0]
		}
	}
	_, err := a.Service.Gates().SetCredentials(r.Context(), principal(r), r.PathValue("id"), values)
	a.afterRequest(w, r, err)
}

func (a *App) chooseIdentity(w http.ResponseWriter, r *http.Request) {
	_, err := a.Service.Gates().ChooseIdentity(r.Context(), principal(r), r.PathValue("id"), r.PostFormValue("as"))
	a.afterRequest(w, r, err)
}

func (a *App) afterRequest(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		a.problem(w, r, err)
		return
	}
	http.Redirect(w, r, "/inbox", http.StatusSeeOther)
}

func (a *App) decide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	// Worded as a missing approval: nothing of a hidden project shows.
	ap, _, err := a.Service.Gates().ApprovalFor(r.Context(), principal(r), id, identity.Approve)
	if err == nil {
		switch d := r.PostFormValue("decision"); d {
		case "approve", "reject":
			_, err = a.Service.Gates().Decide(r.Context(), principal(r), ap.ID, d == "approve", r.PostFormValue("note"))
		default:
			a.fail(w, r, http.StatusBadRequest, "choose Approve or Reject")
			return
		}
	}
	if err != nil {
		a.problem(w, r, err)
		return
	}
	http.Redirect(w, r, localPath(r.PostFormValue("next")), http.StatusSeeOther)
}

// AuditPage is a session's log and its verification.
type AuditPage struct {
	Session session.Session
	Entries []wire.AuditEntry
	Report  wire.AuditReport
}

func (a *App) audit(w http.ResponseWriter, r *http.Request) {
	x, err := a.sessionFor(r, r.PathValue("id"), identity.Audit)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	p := AuditPage{Session: x}
	if p.Entries, err = a.Service.Audit.AuditLog(r.Context(), principal(r), x.ID, false); err != nil {
		a.problem(w, r, err)
		return
	}
	reports, err := a.Service.Audit.VerifyAudit(r.Context(), principal(r), x.ID)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	p.Report = reports[0]
	a.render(w, r, http.StatusOK, "audit", "Audit of "+x.DisplayTitle, p)
}

// readable runs h for a caller who may see the {id} session (the engine
// checks the rest: only its requester gives credentials or an identity).
func (a *App) readable(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.sessionFor(r, r.PathValue("id"), identity.Read); err != nil {
			a.problem(w, r, err)
			return
		}
		h(w, r)
	}
}

// accept delivers exactly the reviewed snapshot (the base and tree the
// page was rendered with) to the repository of origin as a branch.
func (a *App) accept(w http.ResponseWriter, r *http.Request, id string) {
	branch, commit, err := a.Service.Review().AcceptToBranch(r.Context(), principal(r), id, r.PostFormValue("base"), r.PostFormValue("tree"))
	if err != nil {
		a.problem(w, r, err)
		return
	}
	done(w, r, "/sessions/"+url.PathEscape(id)+"/diff", fmt.Sprintf("accepted as commit %.12s on branch %s of the repository of origin: merge it there with git merge %s", commit, branch, branch))
}

// exportAudit downloads a session's log as JSON lines or CEF, as
// `paddock audit export` writes them.
func (a *App) exportAudit(w http.ResponseWriter, r *http.Request) {
	x, err := a.sessionFor(r, r.PathValue("id"), identity.Audit)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	format := r.URL.Query().Get("format")
	if format != audit.FormatJSONL && format != audit.FormatCEF {
		a.fail(w, r, http.StatusBadRequest, "format: want jsonl or cef")
		return
	}
	log, err := a.Service.Audit.AuditLog(r.Context(), principal(r), x.ID, false)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	entries := make([]audit.Entry, len(log))
	for i, e := range log {
		entries[i] = e.Entry
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="paddock-audit-%s.%s"`, x.ID, format))
	if err := audit.Export(w, format, "1", entries); err != nil {
		a.Logger.Warn("audit download cut short", "err", err)
	}
}
