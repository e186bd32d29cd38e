package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/oidctest"
)

// TestLoginThroughTheDirectoryInTheBrowser: the login page's directory
// link runs the authorization code flow (PKCE, state, nonce) against a
// real OpenID provider started here (zitadel/oidc's example OP): its sign-in
// form, back to the callback, and the browser holds a Paddock login as
// the directory's user. An answer the browser did not ask for is refused.
func TestLoginThroughTheDirectoryInTheBrowser(t *testing.T) {
	issuer := oidctest.Start(t, "paddock-web", "http://127.0.0.1/login/oidc/callback")
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	a, err := app.Start(context.Background(), config.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", AdminUser: "boss", LogLevel: slog.LevelWarn,
		OIDCIssuer: issuer, OIDCClientID: "paddock-web"}, logger)
	require.NoError(t, err)
	defer a.Stop()

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: time.Minute}
	page := func(resp *http.Response, err error) (string, *http.Response) {
		t.Helper()
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp
	}

	// The login page offers the directory.
	body, _ := page(browser.Get(a.URL + "/inbox"))
	require.Contains(t, body, `href="/login/oidc?next=%2finbox"`)
	// It leads to the directory's sign-in form.
	_, resp := page(browser.Get(a.URL + "/login/oidc?next=%2finbox"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	id := resp.Request.URL.Query().Get("authRequestID")
	require.NotEmpty(t, id, "at the directory's login page: %s", resp.Request.URL)
	// Signing in there comes back to Paddock, logged in, where it started.
	body, resp = page(browser.PostForm(issuer+"/login/username", url.Values{"id": {id}, "username": {"test-user@127.0.0.1"}, "password": {"verysecure"}}))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, a.URL+"/inbox", resp.Request.URL.String())
	require.Contains(t, body, `<span class="who">test-user-127.0.0.1</span>`)
	u, _ := url.Parse(a.URL)
	var login string
	for _, c := range jar.Cookies(u) {
		if c.Name == api.TokenCookie {
			login = c.Value
		}
	}
	require.True(t, strings.HasPrefix(login, "pdk_"), "a Paddock token in the login cookie")

	// A directory's answer to a login this browser did not start: refused.
	stranger := &http.Client{Timeout: time.Minute}
	body, resp = page(stranger.Get(a.URL + "/login/oidc/callback?state=abc&code=xyz"))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "belongs to no login started here")
	// Nor does a forged login cookie pass.
	req, _ := http.NewRequest(http.MethodGet, a.URL+"/login/oidc/callback?state=abc&code=xyz", nil)
	req.AddCookie(&http.Cookie{Name: "paddock_oidc", Value: "eyJzIjoiYWJjIn0.forged"})
	body, resp = page(stranger.Do(req))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
}
