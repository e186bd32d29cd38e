package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/web"
)

// atkTemporal accepts the signals Send and DecideApproval give.
type atkTemporal struct{ client.Client }

type atkRun struct{ client.WorkflowRun }

func (atkTemporal) SignalWithStartWorkflow(context.Context, string, string, any, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return atkRun{}, nil
}

type atkEnv struct {
	t     *testing.T
	svc   *engine.Service
	st    *sqlstore.Store
	h     http.Handler
	admin identity.Principal
	root  string // the admin's token
}

func atkSetup(t *testing.T) *atkEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	svc := &engine.Service{Store: st, Access: &access.Service{Store: st}, Temporal: atkTemporal{}}
	svc.Audit = &auditlog.Service{Store: st, Access: svc.Access, Sealer: svc.Sealer}
	dir := t.TempDir()
	_, err = svc.Access.Bootstrap(ctx, dir, "root")
	require.NoError(t, err)
	raw, _ := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	app, err := web.New(svc, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	return &atkEnv{t: t, svc: svc, st: st, h: app.Handler(), admin: identity.Principal{User: "root", Admin: true}, root: strings.TrimSpace(string(raw))}
}

// user creates a user with role in project and returns a token of theirs.
func (e *atkEnv) user(name, project string, role identity.Role) string {
	ctx := context.Background()
	_, err := e.svc.Access.CreateUser(ctx, e.admin, name, false)
	require.NoError(e.t, err)
	if project != "" {
		_ = e.svc.Access.CreateProject(ctx, e.admin, project)
		require.NoError(e.t, e.svc.Access.SetMember(ctx, e.admin, identity.Membership{Project: project, User: name, Role: role}))
	}
	_, secret, err := e.svc.Access.NewToken(ctx, e.admin, name, "t", time.Hour)
	require.NoError(e.t, err)
	return secret
}

func (e *atkEnv) session(id, project, title string) {
	_ = e.svc.Access.CreateProject(context.Background(), e.admin, project)
	_, _, err := e.st.CreateSession(context.Background(), store.NewSession{ID: id, Project: project, DisplayTitle: title,
		Agent:     spec.Record{Project: project, Name: "a", Spec: []byte(`{}`), Digest: "d"},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "root"}, StartKind: session.KindStart})
	require.NoError(e.t, err)
}

func (e *atkEnv) approval(id, sessionID string, args string) {
	_, err := e.st.CreateApproval(context.Background(), session.Approval{ID: id, SessionID: sessionID, TurnID: "t1", ToolCallID: "c-" + id,
		Tool: "bash", Args: json.RawMessage(args), Digest: "d", Rule: "r", Reason: "why", Status: session.ApprovalPending,
		ExpiresAt: time.Now().Add(time.Hour), CreatedAt: time.Now()})
	require.NoError(e.t, err)
}

func (e *atkEnv) do(method, path, token string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.AddCookie(&http.Cookie{Name: api.TokenCookie, Value: token})
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return w
}

// csrf is the form token of token's login, read off a page.
func (e *atkEnv) csrf(token string) string {
	w := e.do("GET", "/inbox", token, nil, nil)
	require.Equal(e.t, 200, w.Code)
	v := between(w.Body.String(), `name="csrf" value="`, `"`)
	require.NotEmpty(e.t, v)
	return v
}

// browserResolve is what a browser makes of a Location header: the URL
// parser drops every ASCII tab and newline before resolving it.
func browserResolve(t *testing.T, base, loc string) *url.URL {
	loc = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(loc)
	loc = strings.ReplaceAll(loc, `\`, "/") // special schemes treat \ as /
	b, _ := url.Parse(base)
	u, err := b.Parse(loc)
	require.NoError(t, err)
	return u
}

// TestAttackLoginNextTabOpenRedirect: localPath refused "//host" and
// "/\host", but not "/<TAB>/host" (now it refuses any control character). Go's http.Redirect cannot parse a URL
// with a control character, so it writes it to Location verbatim; a
// browser strips the tab and follows "//evil.example.com/": an open
// redirect off the login form (a phishing link to /login?next=...).
func TestAttackLoginNextTabOpenRedirect(t *testing.T) {
	e := atkSetup(t)
	// The victim follows https://paddock.example/login?next=%2F%09%2Fevil.example.com%2F
	page := e.do("GET", "/login?next="+url.QueryEscape("/\t/evil.example.com/"), "", nil, nil)
	require.Equal(t, 200, page.Code)
	next := between(page.Body.String(), `name="next" value="`, `"`)
	t.Logf("hidden next field: %q", next)
	require.Equal(t, "/", next, "the hostile next does not survive into the login form")

	for _, hostile := range []string{"/\t/evil.example.com/", "/\t\\evil.example.com/"} {
		w := e.do("POST", "/login", "", url.Values{"token": {e.root}, "next": {hostile}}, nil)
		require.Equal(t, http.StatusSeeOther, w.Code)
		loc := w.Header().Get("Location")
		u := browserResolve(t, "https://paddock.example/login", loc)
		t.Logf("next=%q -> Location %q -> browser goes to %s", hostile, loc, u)
		assert.Equal(t, "paddock.example", u.Host, "login redirected off the site (next=%q)", hostile)
	}
}

// TestAttackLoginNextTabOnTheWire: the tab reaches the client in the
// Location header of a real response (not only in the recorder).
func TestAttackLoginNextTabOnTheWire(t *testing.T) {
	e := atkSetup(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body := url.Values{"token": {e.root}, "next": {"/\t/evil.example.com/"}}.Encode()
	_, err = fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: paddock.example\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	raw, _ := io.ReadAll(conn)
	head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	loc := between(head, "Location: ", "\r\n")
	t.Logf("Location on the wire: %q", loc)
	require.Equal(t, "paddock.example", browserResolve(t, "https://paddock.example/login", loc).Host)
}

// TestAttackDecideLeaksHiddenSession: the API answers "approval X: not
// found" for an approval of a project the caller has no role in, giving
// nothing away. The web app's POST /approvals/{id} answers with the
// approval's session ID instead ("session \"<id>\": not found"), and an
// answer that differs from a missing approval's: existence oracle plus
// the hidden session's ID.
func TestAttackDecideLeaksHiddenSession(t *testing.T) {
	e := atkSetup(t)
	e.session("hidden-session-7f3a", "secret", "deploy prod")
	e.approval("ap-secret", "hidden-session-7f3a", `{"cmd":"ls"}`)
	eve := e.user("eve", "mine", identity.Member)
	csrf := e.csrf(eve)

	real := e.do("POST", "/approvals/ap-secret", eve, url.Values{"csrf": {csrf}, "decision": {"approve"}}, nil)
	missing := e.do("POST", "/approvals/ap-nope", eve, url.Values{"csrf": {csrf}, "decision": {"approve"}}, nil)
	t.Logf("existing: %d %q", real.Code, between(real.Body.String(), `role="alert">`, `<`))
	t.Logf("missing:  %d %q", missing.Code, between(missing.Body.String(), `role="alert">`, `<`))
	require.Equal(t, http.StatusNotFound, real.Code)
	require.NotContains(t, real.Body.String(), "hidden-session-7f3a", "the hidden session's ID is given away")
	require.Equal(t, strings.ReplaceAll(missing.Body.String(), "ap-nope", "X"), strings.ReplaceAll(real.Body.String(), "ap-secret", "X"),
		"an approval of a hidden project must look like one that does not exist")
	ap, err := e.st.GetApproval(context.Background(), "ap-secret")
	require.NoError(t, err)
	require.Equal(t, session.ApprovalPending, ap.Status)
}

// TestAttackCookieNotSecureBehindProxy: Secure is set only when the Go
// server itself terminates TLS. PADDOCK_INSECURE_LISTEN=true is the
// documented way to run behind a TLS-terminating proxy; there the login
// cookie (a 30-day API token) is sent without Secure, so any plain-HTTP
// request to the host (an http:// link, a downgrade) carries it in clear.
func TestAttackCookieNotSecureBehindProxy(t *testing.T) {
	e := atkSetup(t)
	w := e.do("POST", "/login", "", url.Values{"token": {e.root}}, map[string]string{"X-Forwarded-Proto": "https"})
	require.Equal(t, http.StatusSeeOther, w.Code)
	sc := w.Header().Get("Set-Cookie")
	t.Logf("Set-Cookie: %s", sc)
	require.Contains(t, sc, "Secure", "behind a TLS proxy the token cookie is not Secure")
}

// TestConsoleRefusesWhatTheRoleDoesNot: the console's changes check the
// same roles as the API: a project's member cannot create users, mint
// another's token, change another project's members or policy, or revoke
// a session of a project hidden from them (404, as if absent); nothing
// changes without the form's CSRF token; a project's own admin manages it.
func TestConsoleRefusesWhatTheRoleDoesNot(t *testing.T) {
	e := atkSetup(t)
	ctx := context.Background()
	e.session("s-secret", "secret", "deploy prod")
	mia := e.user("mia", "mine", identity.Member)
	pam := e.user("pam", "mine2", identity.Admin) // admin of project mine2 only
	for _, c := range []struct {
		who, path string
		form      url.Values
		want      int
	}{
		{mia, "/admin/users", url.Values{"name": {"sneaky"}, "admin": {"true"}}, http.StatusForbidden},
		{mia, "/admin/projects", url.Values{"name": {"grab"}}, http.StatusForbidden},
		{mia, "/admin/tokens", url.Values{"user": {"root"}}, http.StatusForbidden},
		{mia, "/admin/users/root/revoke", url.Values{}, http.StatusForbidden},
		{mia, "/admin/projects/mine/members", url.Values{"user": {"mia"}, "role": {"admin"}}, http.StatusForbidden},
		{mia, "/admin/projects/secret/members", url.Values{"user": {"mia"}, "role": {"admin"}}, http.StatusNotFound},
		{mia, "/admin/projects/secret/policy", url.Values{"policy": {"default: allowedWithoutPermission"}}, http.StatusNotFound},
		{mia, "/admin/projects/mine/replay", url.Values{"policy": {"default: ask"}}, http.StatusForbidden},
		{mia, "/admin/sessions/revoke", url.Values{"session": {"s-secret"}}, http.StatusNotFound},
		{pam, "/admin/projects/mine/members", url.Values{"user": {"pam"}, "role": {"admin"}}, http.StatusNotFound},
		{pam, "/admin/projects/mine2/members", url.Values{"user": {"mia"}, "role": {"viewer"}}, http.StatusSeeOther},
	} {
		c.form.Set("csrf", e.csrf(c.who))
		w := e.do("POST", c.path, c.who, c.form, nil)
		assert.Equal(t, c.want, w.Code, "%s %v: %s", c.path, c.form, between(w.Body.String(), `role="alert">`, `<`))
		if c.want == http.StatusNotFound {
			assert.NotContains(t, w.Body.String(), "deploy prod")
		}
	}
	// Without the form's token nothing changes, even for the admin.
	w := e.do("POST", "/admin/users", e.root, url.Values{"name": {"nocsrf"}}, nil)
	require.Equal(t, http.StatusForbidden, w.Code)
	users, err := e.svc.Access.Users(ctx, e.admin)
	require.NoError(t, err)
	for _, u := range users {
		require.NotContains(t, []string{"sneaky", "nocsrf"}, u.Name)
	}
	x, err := e.st.GetSession(ctx, "s-secret")
	require.NoError(t, err)
	require.Equal(t, session.StatusQueued, x.Status, "the hidden session was not touched")
	ms, err := e.svc.Access.Members(ctx, e.admin, "mine")
	require.NoError(t, err)
	for _, m := range ms {
		require.NotEqual(t, identity.Admin, m.Role, "nobody became admin of mine")
	}
	// The hidden project's page is a 404 too.
	require.Equal(t, http.StatusNotFound, e.do("GET", "/admin/projects/secret", mia, nil, nil).Code)
}
