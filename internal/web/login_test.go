package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
)

// loginCookie logs in with token and returns the cookie the browser keeps.
func (e *atkEnv) loginCookie(token string) *http.Cookie {
	w := e.do("POST", "/login", "", url.Values{"token": {token}}, nil)
	require.Equal(e.t, http.StatusSeeOther, w.Code, w.Body.String())
	for _, c := range w.Result().Cookies() {
		if c.Name == api.TokenCookie {
			return c
		}
	}
	e.t.Fatal("no login cookie")
	return nil
}

// The attack: the login cookie was the API token itself, lived 30 days
// whatever the token's lifetime, and logout only forgot it in the browser:
// a copied cookie worked on after logout, for a month. A web login now
// holds a token of its own, no longer-lived than the one typed in, revoked
// at logout and with its parent.
func TestWebLoginIsASessionOfItsOwn(t *testing.T) {
	e := atkSetup(t)
	ctx := context.Background()
	typed := e.user("ada", "p", identity.Member) // a token of one hour

	c := e.loginCookie(typed)
	require.NotEqual(t, typed, c.Value, "the cookie holds the API token typed in")
	require.LessOrEqual(t, c.MaxAge, int(time.Hour.Seconds()), "the web login outlives the token it was opened with")
	require.Equal(t, 200, e.do("GET", "/inbox", c.Value, nil, nil).Code)
	p, err := e.svc.Access.Authenticate(ctx, c.Value)
	require.NoError(t, err)
	require.Equal(t, "ada", p.User)

	// Logout revokes the web login: the copied cookie no longer works.
	w := e.do("POST", "/logout", c.Value, url.Values{"csrf": {e.csrf(c.Value)}}, nil)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	_, err = e.svc.Access.Authenticate(ctx, c.Value)
	require.ErrorIs(t, err, errdefs.ErrUnauthenticated, "the cookie still authenticates after logout")
	require.Equal(t, http.StatusSeeOther, e.do("GET", "/inbox", c.Value, nil, nil).Code, "a page still opens with the logged-out cookie")
	_, err = e.svc.Access.Authenticate(ctx, typed)
	require.NoError(t, err, "logging out of the web app leaves the API token alone")

	// Revoking the token typed in ends the web logins opened with it.
	c = e.loginCookie(typed)
	id, _, err := identity.ParseToken(typed)
	require.NoError(t, err)
	require.NoError(t, e.svc.Access.RevokeToken(ctx, e.admin, id))
	_, err = e.svc.Access.Authenticate(ctx, c.Value)
	require.ErrorIs(t, err, errdefs.ErrUnauthenticated, "a web login outlives the revocation of its token")
}
