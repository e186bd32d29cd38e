package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// The defect: the API bounded an approval's, an extension's and a start
// decision's note to 2,000 bytes; the web app passed its forms' notes
// straight to the service, which did not. The service bounds them now,
// whatever brought them, with the API's words.
func TestWebNotesAreBoundedAsTheAPIs(t *testing.T) {
	e := atkSetup(t)
	e.session("s1", "default", "t")
	e.approval("ap1", "s1", `{"command":"ls"}`)
	long := strings.Repeat("n", session.MaxReason+1)
	csrf := e.csrf(e.root)
	for _, path := range []string{"/approvals/ap1", "/sessions/s1/extend", "/sessions/s1/start", "/sessions/s1/hold"} {
		w := e.do("POST", path, e.root, url.Values{"csrf": {csrf}, "decision": {"approve"}, "note": {long}, "reason": {long}}, nil)
		require.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", path, w.Body.String())
		require.Contains(t, w.Body.String(), "characters, at most 2000", path)
	}
	ap, err := e.st.GetApproval(t.Context(), "ap1")
	require.NoError(t, err)
	require.Equal(t, session.ApprovalPending, ap.Status, "the over-long note decided the approval")
}
