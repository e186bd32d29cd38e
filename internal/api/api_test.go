package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/remote"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/wire"
)

// server is the API on a real SQLite store, without an engine: these tests
// cover what is refused before a session's workflow would be touched.
func server(t *testing.T) *httptest.Server {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	svc := &engine.Service{Store: st, Access: &access.Service{Store: st}}
	svc.Remotes = &remote.Service{Store: st, Access: svc.Access}
	svc.Audit = &auditlog.Service{Store: st, Access: svc.Access, Sealer: svc.Sealer}
	dir := t.TempDir()
	_, err = svc.Access.Bootstrap(context.Background(), dir, "tester")
	require.NoError(t, err)
	// Sessions that exist, for the routes that check a session first.
	for _, id := range []string{"s", "abc", "done"} {
		_, _, err := st.CreateSession(context.Background(), store.NewSession{ID: id, Project: "default", Agent: spec.Record{Project: "default", Name: "a", Spec: []byte(`{}`), Digest: "d"},
			CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "tester"}, StartKind: session.KindStart})
		require.NoError(t, err)
	}
	require.NoError(t, st.StopSession(context.Background(), "done", session.StopPayload{Reason: "test"}))
	for _, id := range []string{"a", "a1"} {
		_, err := st.CreateApproval(context.Background(), session.Approval{ID: id, SessionID: "s", TurnID: "t", ToolCallID: "c-" + id, Tool: "write_file", Args: []byte(`{}`), Digest: "d", ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	token, err := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	require.NoError(t, err)
	s := &Server{Service: svc, Logger: slog.New(slog.DiscardHandler), BodyTimeout: time.Second}
	h := s.Handler()
	// Requests are the first administrator's unless they say otherwise.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, contentType, body string) (*http.Response, wire.Error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e wire.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp, e
}

func TestRequestValidation(t *testing.T) {
	srv := server(t)
	u := srv.URL
	cases := []struct {
		method, path, ctype, body string
		code                      int
		msg                       string
	}{
		{"DELETE", "/v1/sessions/abc", "", "", 405, "allowed methods are GET"},
		{"PUT", "/v1/sessions", "", "", 405, "GET, HEAD, POST"},
		{"GET", "/v1/projects/x/policy/extra", "", "", 404, "no route"},
		{"POST", "/v1/sessions", "text/plain", `{"message":"x"}`, 415, "application/json"},
		{"POST", "/v1/sessions", "", `{"message":"x"}`, 415, "Content-Type"},
		{"POST", "/v1/sessions/abc/commands", "application/json", "{\"kind\":\"message\",\"payload\":{\"message\":\"a\xffb\"}}", 400, "not valid UTF-8"},
		{"POST", "/v1/sessions", "application/json", `{"message":"x","idempotencyKey":"` + strings.Repeat("k", 201) + `"}`, 400, "idempotencyKey"},
		{"POST", "/v1/sessions", "application/json", `{"project":"../etc"}`, 400, "project"},
		{"POST", "/v1/sessions", "application/json", `{"repo":"` + strings.Repeat("r", 5000) + `"}`, 400, "repo"},
		{"GET", "/v1/sessions?archived=yes", "", "", 400, "want true or false"},
		{"GET", "/v1/sessions?status=sleepy", "", "", 400, "status"},
		{"GET", "/v1/sessions?limit=0", "", "", 400, "limit"},
		{"GET", "/v1/sessions?bogus=1", "", "", 400, "unknown query parameter"},
		{"GET", "/v1/sessions?status=running&status=failed", "", "", 400, "given 2 times"},
		{"GET", "/v1/approvals?status=maybe", "", "", 400, "status"},
		{"GET", "/v1/sessions/abc?x=1", "", "", 400, "takes no query parameters"},
		{"GET", "/v1/projects/..%2Fetc/policy", "", "", 400, "project"},
		{"GET", "/v1/projects/a%0D%0Ab/policy", "", "", 400, "control characters"},
		{"GET", "/v1/projects/" + strings.Repeat("p", 100000) + "/policy", "", "", 400, "at most"},
		{"GET", "/v1/projects/never-made/policy", "", "", 404, "does not exist"},
		{"PUT", "/v1/projects/..%2Fetc/policy", "application/yaml", "default: ask\n", 400, "project"},
		{"PUT", "/v1/projects/p/policy", "application/yaml", "", 400, "empty policy"},
		{"PUT", "/v1/projects/p/policy", "application/yaml", "default: ask\n\xff\n", 400, "not valid UTF-8"},
		{"PUT", "/v1/projects/p/policy", "image/png", "default: ask\n", 415, "application/yaml"},
		{"POST", "/v1/approvals/a1/approve", "application/json", `{"note":"` + strings.Repeat("n", 2001) + `"}`, 400, "at most 2000"},
	}
	for _, c := range cases {
		resp, e := do(t, c.method, u+c.path, c.ctype, c.body)
		require.Equal(t, c.code, resp.StatusCode, "%s %.60s: %s", c.method, c.path, e.Error)
		require.Contains(t, e.Error, c.msg, "%s %.60s", c.method, c.path)
		if c.code == 405 {
			require.NotEmpty(t, resp.Header.Get("Allow"))
		}
	}

	// The default project always exists; one made by a policy then does too.
	resp, _ := do(t, "GET", u+"/v1/projects/default/policy", "", "")
	require.Equal(t, 200, resp.StatusCode)
	resp, e := do(t, "PUT", u+"/v1/projects/made/policy", "application/yaml; charset=utf-8", "default: ask\n")
	require.Equal(t, 200, resp.StatusCode, e.Error)
	resp, _ = do(t, "GET", u+"/v1/projects/made/policy", "", "")
	require.Equal(t, 200, resp.StatusCode)
}

// raw sends bytes on a fresh connection and returns the status line.
func raw(t *testing.T, addr string, req string, closeWrite bool) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	if closeWrite {
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err, "the server answers instead of holding the connection")
	return strings.TrimSpace(line)
}

func TestBodiesThatStopShort(t *testing.T) {
	srv := server(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	// The administrator's (the test server adds the token): the body is read.
	head := "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mess"
	require.Equal(t, "HTTP/1.1 400 Bad Request", raw(t, addr, head, true), "a truncated body is the client's error")
	start := time.Now()
	require.Equal(t, "HTTP/1.1 408 Request Timeout", raw(t, addr, head, false), "a stalled body is cut off")
	require.Less(t, time.Since(start), 20*time.Second)
}

// TestRefusedRequestDoesNotWaitForItsBody is the attack of issue 36: an
// unauthenticated request that announces a body and never sends it is
// answered 401 and its connection closed at once, not held open.
func TestRefusedRequestDoesNotWaitForItsBody(t *testing.T) {
	srv := server(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-token\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	reply, err := io.ReadAll(conn) // ends when the server closes the connection
	require.NoError(t, err, "the connection was held: %q", reply)
	require.Contains(t, string(reply), "401 Unauthorized")
}
