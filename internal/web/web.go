// Package web is the web app `paddock serve` serves beside the API:
// server-rendered pages (html/template, embedded) with a little JavaScript
// for what moves (the transcript over SSE, the sessions list refreshing).
// Login is an API token kept in an HttpOnly, SameSite=Strict cookie; every
// form carries a CSRF token bound to it; every page is sent with a strict
// Content-Security-Policy (scripts and styles from this origin only).
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/chatdesk"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// CSP is every page's Content-Security-Policy.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// App serves the pages.
type App struct {
	Service *engine.Service
	Logger  *slog.Logger
	// Chat links Slack accounts (nil: the console offers none).
	Chat *chatdesk.Service
	// csrfKey binds forms to their login, and signs the directory login's
	// cookie: shared by the nodes of one database, else random per
	// process (a form served before a restart is refused after it, and
	// says so).
	csrfKey []byte
	pages   map[string]*template.Template
}

// New parses the templates. key signs forms and login cookies (nil: a
// random one, this process's own).
func New(svc *engine.Service, logger *slog.Logger, key []byte) (*App, error) {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	a := &App{Service: svc, Logger: logger, csrfKey: key, pages: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"ago":     ago,
		"waits":   waits,
		"visible": visible,
		// parkOf passes a page and a park to the park partial.
		"parkOf": func(root view, id, reason string, spendCap float64, next string) map[string]any {
			return map[string]any{"Root": root, "ID": id, "Reason": reason, "Cap": spendCap, "Suggested": math.Ceil(max(spendCap*2, 1)), "Next": next}
		},
		// when is a time as a person reads it on hover; iso as a machine does.
		"when": func(t time.Time) string { return t.Local().Format("Mon 2 Jan 2006, 15:04:05 MST") },
		"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"minutes": func(d time.Duration) string {
			if d < time.Minute {
				return fmt.Sprintf("%ds", int(d.Seconds()))
			}
			return fmt.Sprintf("%dm", int(d.Minutes()))
		},
		"short": func(s string) string { return shortID(s) },
		"json":  func(b []byte) string { return string(b) },
		// at is the review's address for a page and a view.
		"at": func(page int, split bool) string {
			q := url.Values{"page": {strconv.Itoa(page)}, "view": {"unified"}}
			if split {
				q.Set("view", "split")
			}
			return "?" + q.Encode()
		},
		"pages": func(n int) []int {
			out := make([]int, n)
			for i := range out {
				out[i] = i + 1
			}
			return out
		},
		// dict passes a page and an approval to the approval partial,
		// which returns to the page it was decided from.
		"dict": func(root view, a Pending) map[string]any {
			next := "/inbox"
			if root.Title != "Inbox" {
				next = "/sessions/" + a.SessionID
			}
			return map[string]any{"Root": root, "A": a, "Next": next}
		},
	}
	for _, page := range []string{"login", "sessions", "session", "inbox", "audit", "diff", "reject", "notfound", "console", "project", "new"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("web template %s: %w", page, err)
		}
		a.pages[page] = t
	}
	return a, nil
}

// Handler routes the pages and their assets.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", a.loginPage)
	mux.HandleFunc("POST /login", a.login)
	mux.HandleFunc("GET /login/oidc", a.directoryLogin)
	mux.HandleFunc("GET "+callback, a.directoryCallback)
	mux.HandleFunc("POST /logout", a.authed(a.form(a.logout)))
	mux.HandleFunc("GET /{$}", a.authed(a.sessions))
	mux.HandleFunc("GET /sessions/{id}", a.authed(a.session))
	mux.HandleFunc("POST /sessions/{id}/message", a.authed(a.formOf(session.MaxAttachments*attachment.MaxFile+1<<20, a.message)))
	mux.HandleFunc("POST /sessions/{id}/stop", a.authed(a.form(a.stop)))
	mux.HandleFunc("POST /sessions/{id}/interrupt", a.authed(a.form(a.interrupt)))
	mux.HandleFunc("POST /sessions/{id}/answer", a.authed(a.form(a.answer)))
	mux.HandleFunc("POST /sessions/{id}/archive", a.authed(a.form(a.steered(func(r *http.Request, id string) error {
		_, err := a.Service.Sessions().Archive(r.Context(), principal(r), id)
		return err
	}))))
	mux.HandleFunc("POST /sessions/{id}/hold", a.authed(a.form(a.steered(func(r *http.Request, id string) error {
		_, err := a.Service.Sessions().Hold(r.Context(), principal(r), id, r.PostFormValue("reason"))
		return err
	}))))
	mux.HandleFunc("POST /sessions/{id}/release", a.authed(a.form(a.steered(func(r *http.Request, id string) error {
		_, err := a.Service.Sessions().Release(r.Context(), principal(r), id)
		return err
	}))))
	mux.HandleFunc("GET /sessions/{id}/audit", a.authed(a.audit))
	mux.HandleFunc("GET /sessions/{id}/audit/export", a.authed(a.exportAudit))
	mux.HandleFunc("GET /inbox", a.authed(a.inbox))
	mux.HandleFunc("GET /sessions/{id}/diff", a.authed(a.diff))
	mux.HandleFunc("GET /sessions/{id}/diff.patch", a.authed(a.rawPatch))
	mux.HandleFunc("GET /sessions/{id}/reject", a.authed(a.confirmReject))
	mux.HandleFunc("POST /sessions/{id}/reject", a.authed(a.form(a.reject)))
	mux.HandleFunc("POST /sessions/{id}/retry", a.authed(a.form(func(w http.ResponseWriter, r *http.Request) {
		x, err := a.Service.Sessions().Retry(r.Context(), principal(r), r.PathValue("id"))
		if err != nil {
			a.problem(w, r, err)
			return
		}
		http.Redirect(w, r, "/sessions/"+url.PathEscape(x.ID), http.StatusSeeOther)
	})))
	mux.HandleFunc("POST /sessions/{id}/start", a.authed(a.form(a.decided(func(r *http.Request, id string) error {
		_, err := a.Service.Gates().ApproveStart(r.Context(), principal(r), id, r.PostFormValue("decision") == "approve", r.PostFormValue("note"))
		return err
	}))))
	mux.HandleFunc("POST /sessions/{id}/extend", a.authed(a.form(a.decided(func(r *http.Request, id string) error {
		req := wire.ExtendRequest{Note: r.PostFormValue("note")}
		if v := strings.TrimSpace(r.PostFormValue("spendCapUsd")); v != "" {
			usd, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
			if err != nil || usd <= 0 || math.IsInf(usd, 0) || math.IsNaN(usd) {
				return fmt.Errorf("%w: the new spend cap %q: want an amount in dollars, such as 5 or 12.50", errdefs.ErrInvalid, clip.String(v, 20))
			}
			req.SpendCapUSD = usd
		}
		_, err := a.Service.Gates().Extend(r.Context(), principal(r), id, req)
		return err
	}))))
	mux.HandleFunc("POST /sessions/{id}/unpark", a.authed(a.form(a.decided(func(r *http.Request, id string) error {
		_, err := a.Service.Gates().Unpark(r.Context(), principal(r), id, r.PostFormValue("note"))
		return err
	}))))
	mux.HandleFunc("POST /sessions/{id}/accept", a.authed(a.form(func(w http.ResponseWriter, r *http.Request) {
		a.accept(w, r, r.PathValue("id"))
	})))
	mux.HandleFunc("POST /approvals/{id}", a.authed(a.form(a.decide)))
	mux.HandleFunc("POST /sessions/{id}/credentials", a.authed(a.form(a.readable(a.credentials))))
	mux.HandleFunc("POST /sessions/{id}/identity", a.authed(a.form(a.readable(a.chooseIdentity))))
	mux.HandleFunc("GET /new", a.authed(a.newPage))
	mux.HandleFunc("POST /new", a.authed(a.form(a.start)))
	mux.HandleFunc("GET /admin", a.authed(a.console))
	mux.HandleFunc("POST /admin/projects", a.authed(a.form(a.createProject)))
	mux.HandleFunc("POST /admin/users", a.authed(a.form(a.createUser)))
	mux.HandleFunc("POST /admin/users/{user}/revoke", a.authed(a.form(a.revokeUser)))
	mux.HandleFunc("POST /admin/tokens", a.authed(a.form(a.mintToken)))
	mux.HandleFunc("POST /admin/slack/link", a.authed(a.form(a.linkSlack)))
	mux.HandleFunc("POST /admin/tokens/{id}/revoke", a.authed(a.form(a.revokeToken)))
	mux.HandleFunc("POST /admin/sessions/revoke", a.authed(a.form(a.revokeSession)))
	mux.HandleFunc("GET /admin/projects/{name}", a.authed(a.project))
	mux.HandleFunc("POST /admin/projects/{name}/members", a.authed(a.form(a.managed(a.setMember))))
	mux.HandleFunc("POST /admin/projects/{name}/members/{user}/remove", a.authed(a.form(a.managed(a.removeMember))))
	mux.HandleFunc("POST /admin/projects/{name}/policy", a.authed(a.form(a.managed(a.setPolicy))))
	mux.HandleFunc("POST /admin/projects/{name}/connections", a.authed(a.form(a.managed(a.addConnection))))
	mux.HandleFunc("POST /admin/projects/{name}/connections/{connection}/revoke", a.authed(a.form(a.managed(a.revokeConnection))))
	mux.HandleFunc("POST /admin/projects/{name}/connections/{connection}/link", a.authed(a.form(a.linkForge)))
	mux.HandleFunc("POST /admin/projects/{name}/connections/{connection}/unlink", a.authed(a.form(a.unlinkForge)))
	mux.HandleFunc("POST /admin/projects/{name}/replay", a.authed(a.form(a.managed(a.replay))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a.render(w, r, http.StatusNotFound, "notfound", "No page here", clip.String(r.URL.Path, 200))
	})
	return secured(mux)
}

// secured adds the headers every page is sent with.
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", CSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

type userKey struct{}

// authed runs h for a logged-in caller; others go to the login page.
func (a *App) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(api.TokenCookie)
		if err != nil {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		p, err := a.Service.Access.AuthenticateFrom(r.Context(), api.Source(r), c.Value)
		var throttled *errdefs.ThrottledError
		if errors.As(err, &throttled) {
			w.Header().Set("Retry-After", strconv.Itoa(int(throttled.Wait.Seconds())+1))
			a.fail(w, r, http.StatusTooManyRequests, throttled.Error())
			return
		}
		if err != nil {
			clearCookie(w, r)
			http.Redirect(w, r, "/login?expired=1", http.StatusSeeOther)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), userKey{}, p)))
	}
}

func principal(r *http.Request) identity.Principal {
	p, _ := r.Context().Value(userKey{}).(identity.Principal)
	return p
}

func sender(r *http.Request) session.Sender {
	return principal(r).Sender()
}

// csrf is the form token of the caller's login.
func (a *App) csrf(r *http.Request) string {
	c, _ := r.Cookie(api.TokenCookie)
	if c == nil {
		return ""
	}
	m := hmac.New(sha256.New, a.csrfKey)
	m.Write([]byte(c.Value))
	return hex.EncodeToString(m.Sum(nil))
}

// form checks a state-changing request: same origin, and the CSRF token
// of the caller's login.
func (a *App) form(h http.HandlerFunc) http.HandlerFunc { return a.formOf(1<<20, h) }

// formOf is form for a form of up to limit bytes, which may carry files
// (multipart, kept in memory up to 32 MiB, on disk beyond while the
// request lasts).
func (a *App) formOf(limit int64, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		err := r.ParseForm()
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" && limit > 1<<20 {
			err = r.ParseMultipartForm(32 << 20)
			defer func() {
				if r.MultipartForm != nil {
					_ = r.MultipartForm.RemoveAll()
				}
			}()
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the form is larger than %s: send fewer or smaller files", clip.Bytes(limit)))
			return
		}
		if err != nil {
			a.fail(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
			a.fail(w, r, http.StatusForbidden, "a form from another site was refused")
			return
		}
		if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(a.csrf(r))) {
			a.fail(w, r, http.StatusForbidden, "this form has expired or was not sent by this page: reload the page and try again")
			return
		}
		h(w, r)
	}
}

func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// setCookie keeps the web login's token (t, whose text is full) for as
// long as the token lives.
func setCookie(w http.ResponseWriter, r *http.Request, t identity.Token, full string) {
	c := &http.Cookie{Name: api.TokenCookie, Value: full, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)}
	if t.ExpiresAt != nil {
		c.Expires = *t.ExpiresAt
		c.MaxAge = max(1, int(time.Until(*t.ExpiresAt).Seconds()))
	}
	http.SetCookie(w, c)
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: api.TokenCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r), MaxAge: -1})
}

// secure says the browser reached the app over HTTPS: served with TLS, or
// through a proxy terminating it (PADDOCK_INSECURE_LISTEN behind one).
// Marking the cookie Secure on the proxy's word only ever restricts it.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// view is what every page template gets.
type view struct {
	Title string
	User  identity.Principal
	CSRF  string
	Data  any
	// Inbox counts the calls waiting for the user's decision (the
	// navigation shows it).
	Inbox int
}

func (a *App) render(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	t := a.pages[page]
	var b strings.Builder
	v := view{Title: title, User: principal(r), CSRF: a.csrf(r), Data: data}
	if v.User.User != "" {
		if aps, err := a.Service.Gates().Approvals(r.Context(), v.User, identity.Approve, session.ApprovalFilter{Status: session.ApprovalPending}); err == nil {
			v.Inbox = len(aps)
		}
	}
	if err := t.Execute(&b, v); err != nil {
		a.Logger.Error("web page", "page", page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail shows an error on a page of its own.
func (a *App) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	a.render(w, r, status, "login", "Paddock", LoginPage{Message: msg, Directory: a.directory()})
}

// problem maps an engine error to a page.
func (a *App) problem(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := api.StatusOf(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		a.Logger.Error("web", "path", r.URL.Path, "err", err)
		msg = "something went wrong; the server log has the details"
	}
	a.fail(w, r, status, msg)
}

func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
