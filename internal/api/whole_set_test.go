package api

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// The attack: a user's one session, then 2,500 newer sessions by someone
// else. Revoking the user must still stop the old session (every session
// list used to stop at the newest 1,000, and revocation used one list), and
// the session list pages through all of them with its cursor.
func TestRevokeUserReachesBeyondTheNewest1000(t *testing.T) {
	e := attackServer(t)
	e.project(t, "p")
	victim := e.user(t, "victim")
	e.member(t, "p", "victim", "member")
	code, body := e.call(t, victim, "POST", "/v1/sessions", "application/json", `{"project":"p","message":"mine"}`)
	require.Equal(t, 201, code, body)
	var x session.Session
	require.NoError(t, json.Unmarshal([]byte(body), &x))

	const newer = 2500
	for i := range newer {
		e.session(t, fmt.Sprintf("other-%04d", i), "p", "")
	}

	// The list pages: 1,000 at most, then the cursor, to the last row.
	seen := map[string]bool{}
	before := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "the cursor does not advance")
		code, body := e.call(t, e.admin, "GET", "/v1/sessions?project=p&before="+before, "", "")
		require.Equal(t, 200, code, body)
		var page struct {
			Sessions []session.Session `json:"sessions"`
			Next     string            `json:"next"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &page))
		require.LessOrEqual(t, len(page.Sessions), session.MaxPage)
		for _, s := range page.Sessions {
			require.False(t, seen[s.ID], "%s listed twice", s.ID)
			seen[s.ID] = true
		}
		if page.Next == "" {
			break
		}
		before = page.Next
	}
	require.Len(t, seen, newer+1, "every session is listed once")
	require.True(t, seen[x.ID], "the oldest session is on the last page")

	// A cursor naming a session the caller may not read lists nothing, as
	// an unknown one does: it tells nothing of that session.
	e.project(t, "hidden")
	e.session(t, "hidden-one", "hidden", "")
	code, hidden := e.call(t, victim, "GET", "/v1/sessions?before=hidden-one", "", "")
	require.Equal(t, 200, code, hidden)
	_, unknown := e.call(t, victim, "GET", "/v1/sessions?before=no-such-one", "", "")
	require.JSONEq(t, unknown, hidden)

	code, body = e.call(t, e.admin, "POST", "/v1/users/victim/revoke", "", "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, x.ID, "revocation names the victim's session as stopped")
	require.True(t, e.stopRecorded(t, x.ID), "revoke-user reported %s, but no stop was recorded for %s", body, x.ID)
}
