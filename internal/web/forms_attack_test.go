package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

// withModels lets CreateSession resolve the ad-hoc model.
func (e *atkEnv) withModels() {
	reg := provider.NewRegistry()
	reg.Register("replay", func(string) (provider.Provider, error) { return nil, nil })
	e.svc.Providers = reg
}

func (e *atkEnv) sessionsIn(project string) int {
	xs, err := e.st.ListSessions(context.Background(), session.Filter{Project: project, IncludeArchived: true})
	require.NoError(e.t, err)
	return len(xs)
}

// TestStartWithoutProjectStartsInDefault: POST /new checks Allow on
// the project as typed; an empty project is checked as "" — and the store
// reads Members("", user) as "every membership of user", so the role of
// the caller's first project answers — while CreateSession then defaults
// the empty project to "default". A member of any project starts sessions
// (its agents, with their service credentials when the agent acts as the
// service identity) in the default project, where they have no role.
func TestStartWithoutProjectStartsInDefault(t *testing.T) {
	e := atkSetup(t)
	e.withModels()
	mia := e.user("mia", "mine", identity.Member)
	// Control: her own project works.
	w := e.do("POST", "/new", mia, url.Values{"csrf": {e.csrf(mia)}, "project": {"mine"}, "message": {"hi"}, "key": {"k0"}}, nil)
	require.Equal(t, http.StatusSeeOther, w.Code, between(w.Body.String(), `role="alert">`, `<`))
	// The default project, named, is hidden from her.
	w = e.do("POST", "/new", mia, url.Values{"csrf": {e.csrf(mia)}, "project": {"default"}, "message": {"hi"}, "key": {"k1"}}, nil)
	require.Equal(t, http.StatusNotFound, w.Code)
	// Unnamed, it is not.
	w = e.do("POST", "/new", mia, url.Values{"csrf": {e.csrf(mia)}, "project": {""}, "message": {"hi"}, "key": {"k2"}}, nil)
	assert.NotEqual(t, http.StatusSeeOther, w.Code, "redirected to %s", w.Header().Get("Location"))
	require.Zero(t, e.sessionsIn("default"), "a user without a role in project default started a session there")
}

// TestStartWithAnyRepositoryOnTheServer: the repository of origin
// was any absolute path the server can read: a member of project mine named
// a repository not hers (another project's, another Unix user's) and the
// server cloned it for her agent. With repository roots, project mine's
// sessions copy only repositories under ROOT/mine/, links resolved, and a
// path outside is refused without saying whether it exists.
func TestStartWithAnyRepositoryOnTheServer(t *testing.T) {
	e := atkSetup(t)
	e.withModels()
	root := t.TempDir()
	e.svc.RepositoryRoots = []string{root}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "mine"), 0o755))
	own := filepath.Join(root, "mine", "app")
	require.NoError(t, os.Rename(repo(t), own))
	theirs := repo(t) // e.g. /srv/repos/project-b, or /root/infra
	require.NoError(t, os.Symlink(theirs, filepath.Join(root, "mine", "link")))
	mia := e.user("mia", "mine", identity.Member)
	start := func(path, key string) *httptest.ResponseRecorder {
		return e.do("POST", "/new", mia, url.Values{"csrf": {e.csrf(mia)}, "project": {"mine"}, "repo": {path}, "message": {"cat everything"}, "key": {key}}, nil)
	}
	require.Equal(t, http.StatusSeeOther, start(own, "k0").Code, "her project's own repository")
	for i, path := range []string{theirs, filepath.Join(root, "mine", "link"), filepath.Join(root, "mine", "..", "other", "x"), "/nonexistent/mine"} {
		w := start(path, fmt.Sprint("k", i+1))
		assert.Equal(t, http.StatusBadRequest, w.Code, path)
		assert.Contains(t, w.Body.String(), "sessions copy only their project&#39;s repositories", path)
	}
	xs, err := e.st.ListSessions(context.Background(), session.Filter{Project: "mine"})
	require.NoError(t, err)
	require.Len(t, xs, 1)
	require.Equal(t, own, xs[0].Repo)
}

// TestFieldsAreEscaped: titles, token labels, candidate policies,
// the replay window and the login's next are text on every page.
func TestFieldsAreEscaped(t *testing.T) {
	e := atkSetup(t)
	const xss = `</textarea></pre>"'><script>alert(1)</script><img src=x onerror=alert(1)>`
	pam := e.user("pam", "mine", identity.Admin)
	e.session("s-xss", "mine", xss)
	check := func(what string, w *httptest.ResponseRecorder) {
		t.Helper()
		body := w.Body.String()
		assert.NotContains(t, body, "<script>alert", what)
		assert.NotContains(t, body, "<img src=x", what)
		assert.NotContains(t, body, "</textarea></pre>", what)
	}
	for _, p := range []string{"/", "/?fragment=list", "/sessions/s-xss", "/sessions/s-xss/diff", "/sessions/s-xss/audit", "/inbox"} {
		w := e.do("GET", p, pam, nil, nil)
		check(p, w)
		if p != "/inbox" {
			assert.Contains(t, w.Body.String(), "&lt;script&gt;alert(1)", "%s shows the title, as text", p)
		}
	}
	check("token label", e.do("POST", "/admin/tokens", pam, url.Values{"csrf": {e.csrf(pam)}, "label": {xss}}, nil))
	check("console", e.do("GET", "/admin", pam, nil, nil))
	w := e.do("POST", "/admin/projects/mine/replay", pam, url.Values{"csrf": {e.csrf(pam)}, "policy": {xss}}, nil)
	assert.Contains(t, w.Body.String(), "&lt;/textarea&gt;", "the candidate is echoed, as text")
	check("replay bad", w)
	check("replay", e.do("POST", "/admin/projects/mine/replay", pam, url.Values{"csrf": {e.csrf(pam)}, "policy": {"default: ask\n# " + xss}, "since": {xss}}, nil))
	check("policy", e.do("POST", "/admin/projects/mine/policy", pam, url.Values{"csrf": {e.csrf(pam)}, "policy": {xss}}, nil))
	check("login next", e.do("GET", "/login?next="+url.QueryEscape("/"+xss), "", nil, nil))
	check("expires", e.do("POST", "/admin/tokens", pam, url.Values{"csrf": {e.csrf(pam)}, "expires": {xss}}, nil))
}

// TestHiddenSessionFormsAre404: every new form on a session of a
// project hidden from the caller is the same 404, naming nothing of it.
func TestHiddenSessionFormsAre404(t *testing.T) {
	e := atkSetup(t)
	ctx := context.Background()
	e.session("s-secret", "secret", "deploy prod")
	mia := e.user("mia", "mine", identity.Member)
	for _, c := range []struct {
		method, path string
		form         url.Values
	}{
		{"POST", "/sessions/s-secret/credentials", url.Values{"cred.TOKEN": {"x"}}},
		{"POST", "/sessions/s-secret/identity", url.Values{"as": {"service"}}},
		{"POST", "/sessions/s-secret/accept", url.Values{"base": {strings.Repeat("a", 40)}, "tree": {strings.Repeat("b", 40)}}},
		{"POST", "/admin/sessions/revoke", url.Values{"session": {"s-secret"}}},
		{"GET", "/sessions/s-secret/audit/export?format=jsonl", nil},
		{"GET", "/sessions/s-secret/diff", nil},
	} {
		if c.form != nil {
			c.form.Set("csrf", e.csrf(mia))
		}
		w := e.do(c.method, c.path, mia, c.form, nil)
		assert.Equal(t, http.StatusNotFound, w.Code, c.path)
		assert.NotContains(t, w.Body.String(), "deploy prod", c.path)
		assert.NotContains(t, w.Body.String(), "secret\n", c.path)
	}
	// Another user's token: the same 404 as a token that does not exist.
	root, err := e.svc.Access.Tokens(ctx, e.admin, "root")
	require.NoError(t, err)
	require.NotEmpty(t, root)
	a := e.do("POST", "/admin/tokens/"+root[0].ID+"/revoke", mia, url.Values{"csrf": {e.csrf(mia)}}, nil)
	b := e.do("POST", "/admin/tokens/nosuchtoken/revoke", mia, url.Values{"csrf": {e.csrf(mia)}}, nil)
	require.Equal(t, http.StatusNotFound, a.Code)
	require.Equal(t, b.Code, a.Code)
	_, err = e.svc.Access.Authenticate(ctx, e.root)
	require.NoError(t, err, "root's token still works")
	// Nor does ?user= list another's tokens.
	require.NotContains(t, e.do("GET", "/admin?user=root", mia, nil, nil).Body.String(), root[0].ID)
	// A form from another site, or without the form's token, changes nothing.
	e.withModels()
	w := e.do("POST", "/new", mia, url.Values{"project": {"mine"}, "key": {"x"}}, nil)
	require.Equal(t, http.StatusForbidden, w.Code)
	w = e.do("POST", "/new", mia, url.Values{"csrf": {e.csrf(mia)}, "project": {"mine"}, "key": {"y"}}, map[string]string{"Origin": "https://evil.example"})
	require.Equal(t, http.StatusForbidden, w.Code)
	w = e.do("POST", "/login", "", url.Values{"token": {e.root}}, map[string]string{"Origin": "https://evil.example"})
	require.Equal(t, http.StatusForbidden, w.Code, "login CSRF")
	require.Zero(t, e.sessionsIn("mine"))
}

// TestDirectoryLoginCookie: the login under way is bound to its
// signed cookie: next is kept on this site, a tampered cookie or another
// state is refused, and a failed exchange logs nobody in.
func TestDirectoryLoginCookie(t *testing.T) {
	e := atkSetup(t)
	var issuer string
	dir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "authorization_endpoint": issuer + "/auth", "token_endpoint": issuer + "/token",
				"jwks_uri": issuer + "/keys", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
				"id_token_signing_alg_values_supported": []string{"RS256"}})
		case "/token":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer dir.Close()
	issuer = dir.URL
	e.svc.Access.OIDC = access.NewOIDC(issuer, "paddock-web", "")

	callback := func(state, cookie string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/login/oidc/callback?code=c&state="+url.QueryEscape(state), nil)
		req.AddCookie(&http.Cookie{Name: "paddock_oidc", Value: cookie})
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		return w
	}
	for next, want := range map[string]string{
		"//evil.example/x": "/", "/\t/evil.example": "/", "https://evil.example/": "/", `/\evil.example`: "/",
		"javascript:alert(1)": "/", "/sessions/s1?x=1": "/sessions/s1?x=1",
	} {
		w := e.do("GET", "/login/oidc?next="+url.QueryEscape(next), "", nil, nil)
		require.Equal(t, http.StatusSeeOther, w.Code)
		loc, err := url.Parse(w.Header().Get("Location"))
		require.NoError(t, err)
		require.Equal(t, issuer+"/auth", loc.Scheme+"://"+loc.Host+loc.Path)
		q := loc.Query()
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		require.NotEmpty(t, q.Get("nonce"))
		var c *http.Cookie
		for _, k := range w.Result().Cookies() {
			if k.Name == "paddock_oidc" {
				c = k
			}
		}
		require.NotNil(t, c)
		require.True(t, c.HttpOnly)
		require.Equal(t, "/login/oidc/callback", c.Path)
		payload, sig, _ := strings.Cut(c.Value, ".")
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		require.NoError(t, err)
		var p map[string]string
		require.NoError(t, json.Unmarshal(raw, &p))
		assert.Equal(t, want, p["x"], "next %q", next)
		require.Equal(t, q.Get("state"), p["s"])

		// The cookie's next rewritten, its signature kept: refused.
		p["x"] = "//evil.example"
		forged, _ := json.Marshal(p)
		w = callback(p["s"], base64.RawURLEncoding.EncodeToString(forged)+"."+sig)
		require.Equal(t, http.StatusBadRequest, w.Code)
		// Another state: refused.
		w = callback("someone-elses", c.Value)
		require.Equal(t, http.StatusBadRequest, w.Code)
		// The right state, a code the directory refuses: nobody logged in.
		w = callback(q.Get("state"), c.Value)
		require.Equal(t, http.StatusBadGateway, w.Code)
		for _, k := range w.Result().Cookies() {
			require.NotEqual(t, api.TokenCookie, k.Name)
		}
	}
}
