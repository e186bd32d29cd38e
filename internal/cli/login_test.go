package cli_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/oidctest"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestLoginThroughTheDirectory: `paddock login` against a real OpenID
// provider started here (zitadel/oidc's example OP, with its login form):
// the URL it prints leads to the directory's sign-in, the code comes back
// to its loopback port, the server verifies the ID token and creates the
// user (no role anywhere), and the token lands in the user's credentials
// file with mode 600, which later commands use. A forged ID token is a 401.
func TestLoginThroughTheDirectory(t *testing.T) {
	issuer := oidctest.Start(t, "paddock-cli", "http://127.0.0.1/callback")

	dir := t.TempDir()
	a, err := app.Start(context.Background(), config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "boss", LogLevel: slog.LevelWarn,
		OIDCIssuer: issuer, OIDCClientID: "paddock-cli"}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()

	home := t.TempDir()
	env := map[string]string{"PADDOCK_SERVER": a.URL, "PADDOCK_DATA_DIR": t.TempDir(), "XDG_CONFIG_HOME": home}
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		done <- cli.Run(context.Background(), []string{"login"}, cli.IO{Server: app.CLI, In: strings.NewReader(""), Out: pw, Err: &errOut, Getenv: func(k string) string { return env[k] }})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var authURL string
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), issuer); ok {
			authURL = issuer + u
			break
		}
	}
	require.NotEmpty(t, authURL, "the URL to open: %s%s", out.String(), errOut.String())
	go func() { _, _ = io.Copy(&out, pr) }()

	// The person in the browser: the directory's sign-in form.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err := browser.Get(authURL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	id := resp.Request.URL.Query().Get("authRequestID")
	require.NotEmpty(t, id, "redirected to the login page: %s", resp.Request.URL)
	resp, err = browser.PostForm(issuer+"/login/username", url.Values{"id": {id}, "username": {"test-user@127.0.0.1"}, "password": {"verysecure"}})
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(page), "Logged in", "the loopback page")

	select {
	case code := <-done:
		require.Equal(t, 0, code, out.String()+errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("paddock login did not finish")
	}
	require.Contains(t, out.String(), "logged in to "+a.URL+" as test-user-127.0.0.1")
	creds := filepath.Join(home, "paddock", "credentials.yaml")
	fi, err := os.Stat(creds)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Later commands use the saved token; the new user has no role yet.
	var whoami strings.Builder
	code := cli.Run(context.Background(), []string{"whoami"}, cli.IO{Server: app.CLI, In: strings.NewReader(""), Out: &whoami, Err: &whoami, Getenv: func(k string) string { return env[k] }})
	require.Equal(t, 0, code, whoami.String())
	require.Contains(t, whoami.String(), "test-user-127.0.0.1, authenticated by token:")

	// An ID token the directory did not sign is refused.
	_, err = client.New(a.URL).Access().LoginOIDC(context.Background(), wire.OIDCLogin{IDToken: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)
}
