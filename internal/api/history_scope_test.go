package api

import (
	"context"
	"testing"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/stretchr/testify/require"
)

// TestHistoryScoped: a session's checkpoint history (paths and
// content hashes of its files) is a 404 to a caller with no role in its
// project, the same 404 as a session that does not exist; the project's
// guest reads it. (Passes.)
func TestHistoryScoped(t *testing.T) {
	e := attackServer(t)
	e.project(t, "secret")
	e.project(t, "mine")
	e.session(t, "hidden", "secret", "")
	_, _, err := e.st.SaveStep(context.Background(), session.Step{SessionID: "hidden", Base: "b", Tree: "t", CallID: "c",
		Files: []session.StepFile{{Path: "credentials.txt", Mode: "100644", Blob: "deadbeef"}}}, map[string][]byte{"deadbeef": []byte("sealed")})
	require.NoError(t, err)
	eve := e.user(t, "eve")
	e.member(t, "mine", "eve", "guest")
	code, body := e.call(t, eve, "GET", "/v1/sessions/hidden/history", "", "")
	require.Equal(t, 404, code, body)
	require.NotContains(t, body, "credentials.txt")
	code2, body2 := e.call(t, eve, "GET", "/v1/sessions/no-such-session/history", "", "")
	require.Equal(t, 404, code2, body2)
	for _, p := range []string{"/v1/sessions/hidden%2F..%2Fx/history", "/v1/sessions/%00/history", "/v1/sessions/hidden/history?x=1"} {
		code, body := e.call(t, eve, "GET", p, "", "")
		require.NotEqual(t, 200, code, "%s: %s", p, body)
	}
	e.member(t, "secret", "eve", "guest")
	code, body = e.call(t, eve, "GET", "/v1/sessions/hidden/history", "", "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "credentials.txt")
}
