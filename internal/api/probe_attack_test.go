package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// The attack: a project admin told the server's user names apart from
// names never taken (PUT members/NAME: 404 or 200). Now either is an
// answer of one kind (a role for a name not taken is an invitation), and
// an invited name gets its role once it exists.
func TestMembersTellNothingOfOtherUsers(t *testing.T) {
	e := attackServer(t)
	e.project(t, "mine")
	e.user(t, "existing")
	pa := e.user(t, "pa")
	e.member(t, "mine", "pa", "admin")

	c1, b1 := e.call(t, pa, "PUT", "/v1/projects/mine/members/existing", "application/json", `{"role":"viewer"}`)
	c2, b2 := e.call(t, pa, "PUT", "/v1/projects/mine/members/never-taken", "application/json", `{"role":"viewer"}`)
	require.Equal(t, c1, c2, "%s / %s", b1, b2)
	require.Equal(t, 200, c1, b1)
	require.Equal(t, strings.ReplaceAll(b1, "existing", "X"), strings.ReplaceAll(b2, "never-taken", "X"))
	c1, _ = e.call(t, pa, "DELETE", "/v1/projects/mine/members/existing", "", "")
	c2, _ = e.call(t, pa, "DELETE", "/v1/projects/mine/members/never-taken", "", "")
	require.Equal(t, c1, c2)

	// The invitation holds once the name is taken; a server administrator
	// is still told of a name that does not exist.
	code, body := e.call(t, pa, "PUT", "/v1/projects/mine/members/later", "application/json", `{"role":"viewer"}`)
	require.Equal(t, 200, code, body)
	later := e.user(t, "later")
	code, body = e.call(t, later, "GET", "/v1/sessions?project=mine", "", "")
	require.Equal(t, 200, code, "the invited role: %s", body)
	code, body = e.call(t, e.admin, "PUT", "/v1/projects/mine/members/no-such-user", "application/json", `{"role":"viewer"}`)
	require.Equal(t, 404, code, body)
}

// The attack: a user with no role anywhere read the audit checkpoint, whose
// size says how much every project is doing.
func TestCheckpointIsForAuditors(t *testing.T) {
	e := attackServer(t)
	e.project(t, "p")
	nobody := e.user(t, "nobody")
	code, body := e.call(t, nobody, "GET", "/v1/audit/checkpoint", "", "")
	require.Equal(t, 403, code, body)
	aud := e.user(t, "aud")
	e.member(t, "p", "aud", "auditor")
	code, body = e.call(t, aud, "GET", "/v1/audit/checkpoint", "", "")
	require.NotEqual(t, 403, code, "an auditor reads the checkpoint: %s", body)
}

// The attack: the retry key was global, so a guest's retry of a failed
// session was what a member's later retry returned (a session waiting on
// the guest's start approval, created by the guest).
func TestRetryIsTheCallersOwn(t *testing.T) {
	e := attackServer(t)
	e.project(t, "p")
	guest := e.user(t, "guest")
	e.member(t, "p", "guest", "guest")
	mem := e.user(t, "mem")
	e.member(t, "p", "mem", "member")
	code, body := e.call(t, mem, "POST", "/v1/sessions", "application/json", `{"project":"p","message":"x"}`)
	require.Equal(t, 201, code, body)
	var x session.Session
	require.NoError(t, json.Unmarshal([]byte(body), &x))
	require.NoError(t, e.st.FailSession(context.Background(), x.ID, "it broke"))

	retry := func(token string) session.Session {
		code, body := e.call(t, token, "POST", "/v1/sessions/"+x.ID+"/retry", "", "")
		require.Contains(t, []int{200, 201}, code, body)
		var y session.Session
		require.NoError(t, json.Unmarshal([]byte(body), &y))
		return y
	}
	g := retry(guest)
	m := retry(mem)
	require.NotEqual(t, g.ID, m.ID, "the member's retry is the guest's")
	require.Equal(t, "mem", m.CreatedBy.ID)
	require.Equal(t, m.ID, retry(mem).ID, "a caller's retry is idempotent")
}
