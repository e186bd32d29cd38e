package api

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBodiesReadOneWay: no two different bodies may read alike, and a
// route that takes no body refuses one, before anything is recorded.
func TestBodiesReadOneWay(t *testing.T) {
	srv := server(t)
	u := srv.URL
	const js = "application/json"
	cases := []struct {
		method, path, ctype, body string
		code                      int
		msg                       string
	}{
		// Unpaired surrogates decode to U+FFFD: two keys would collide.
		{"POST", "/v1/sessions", js, `{"message":"x","idempotencyKey":"\ud800"}`, 400, "unpaired surrogate"},
		{"POST", "/v1/sessions", js, `{"message":"x","idempotencyKey":"a\udc00"}`, 400, "unpaired surrogate"},
		{"POST", "/v1/sessions", js, `{"message":"\ud83d x"}`, 400, "unpaired surrogate"},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"message","payload":{"message":"\udfff"}}`, 400, "unpaired surrogate"},
		// A key named twice: which one counts would depend on the parser.
		{"POST", "/v1/sessions", js, `{"message":"a","message":"b"}`, 400, `"message" given twice`},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"stop","kind":"message","payload":{"message":"m"}}`, 400, "given twice"},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"message","payload":{"message":"a","message":"b"}}`, 400, "given twice"},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"message","payload":{"message":"a","metadata":{"k":"1","k":"2"}}}`, 400, "given twice"},
		// Field names are case-sensitive, in bodies and payloads.
		{"POST", "/v1/sessions", js, `{"MESSAGE":"a"}`, 400, `unknown field "MESSAGE"`},
		{"POST", "/v1/sessions", js, `{"IdempotencyKey":"a"}`, 400, "unknown field"},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"message","payload":{"Message":"a"}}`, 400, `unknown field "Message"`},
		{"POST", "/v1/approvals/a/approve", js, `{"Note":"x"}`, 400, "unknown field"},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"message","payload":{"message":"x","metadata":` + repeat("[", 5000) + `}}`, 400, "nested more than"},
		// A body is a JSON object.
		{"POST", "/v1/sessions", js, `null`, 400, "want a JSON object"},
		{"POST", "/v1/sessions", js, `"x"`, 400, "want a JSON object"},
		{"POST", "/v1/sessions/s/commands", js, `{"kind":"message","payload":[]}`, 400, "want a JSON object"},
		// Routes that take no body refuse one.
		{"POST", "/v1/gc", js, `{"force":true}`, 400, "unknown field"},
		{"POST", "/v1/gc", "text/plain", `collect everything`, 415, "application/json"},
		{"POST", "/v1/sessions/s/archive", js, `{"reason":"x"}`, 400, "unknown field"},
		{"POST", "/v1/sessions/s/retry", js, `{"model":"x"}`, 400, "unknown field"},
		{"POST", "/v1/sessions/s/reject", js, `[]`, 400, "want a JSON object"},
		// The platform's own idempotency keys are not the caller's.
		{"POST", "/v1/sessions", js, `{"message":"x","idempotencyKey":"retry:abc"}`, 400, "reserved"},
		{"POST", "/v1/sessions", js, `{"message":"x","idempotencyKey":"successor:abc"}`, 400, "reserved"},
		// A relative repository would be relative to the server's directory.
		{"POST", "/v1/sessions", js, `{"message":"x","repo":"."}`, 400, "absolute path"},
		{"POST", "/v1/sessions", js, `{"message":"x","repo":"../x"}`, 400, "absolute path"},
		{"POST", "/v1/sessions", js, `{"message":"x","repo":"https://169.254.169.254/x.git"}`, 400, "no connection grants it"},
		{"POST", "/v1/sessions", js, `{"message":"x","repo":"ext::sh -c id"}`, 400, "not a remote repository Paddock fetches"},
		// Accept's fields have length limits.
		{"POST", "/v1/sessions/s/accept", js, `{"mode":"commit","base":"b","tree":"t","commit":"` + repeat("c", 201) + `"}`, 400, "commit"},
		// Project and agent names are checked wherever they are taken.
		{"GET", "/v1/agents?project=..%2Fetc", "", "", 400, "project"},
		{"GET", "/v1/agents?project=", "", "", 400, "project"},
		{"GET", "/v1/agents?project=never-made", "", "", 404, "does not exist"},
		{"GET", "/v1/agents/x?project=never-made", "", "", 404, "does not exist"},
		{"GET", "/v1/agents/Not_A_Name", "", "", 400, "agent"},
		{"GET", "/v1/sessions?project=..%2Fetc", "", "", 400, "project"},
		{"GET", "/v1/sessions?project=never-made", "", "", 404, "does not exist"},
		{"POST", "/v1/projects/never-made/policy/replay", "application/yaml", "default: ask\n", 404, "does not exist"},
		{"POST", "/v1/projects/default/policy/replay?since=99999999999999d", "application/yaml", "default: ask\n", 400, "since"},
		// A policy document that sets nothing is as empty as no body; a
		// second document would be silently dropped.
		{"PUT", "/v1/projects/p/policy", "application/yaml", "null\n", 400, "empty policy"},
		{"PUT", "/v1/projects/p/policy", "application/yaml", "# nothing\n", 400, "empty policy"},
		{"PUT", "/v1/projects/p/policy", "application/yaml", "---\n", 400, "empty policy"},
		{"PUT", "/v1/projects/p/policy", "application/json", "{}", 400, "empty policy"},
		{"PUT", "/v1/projects/p/policy", "application/yaml", "default: ask\n---\ndefault: allow\n", 400, "more than one YAML document"},
		{"POST", "/v1/projects/default/policy/replay", "application/yaml", "", 400, "empty policy"},
		// A !!binary scalar is bytes, not text: it would be replaced with U+FFFD.
		{"PUT", "/v1/projects/p/policy", "application/yaml", "commands:\n  allow: [!!binary /w==]\n", 400, "not valid UTF-8"},
		{"PUT", "/v1/projects/p/policy", "application/yaml", "tools:\n  !!binary /w==: allow\n", 400, "not valid UTF-8"},
	}
	for _, c := range cases {
		resp, e := do(t, c.method, u+c.path, c.ctype, c.body)
		require.Equal(t, c.code, resp.StatusCode, "%s %s %.80s: %s", c.method, c.path, c.body, e.Error)
		require.Contains(t, e.Error, c.msg, "%s %s %.80s", c.method, c.path, c.body)
	}
	// Nothing above made the project.
	resp, _ := do(t, "GET", u+"/v1/projects/p/policy", "", "")
	require.Equal(t, 404, resp.StatusCode)

	// A paired surrogate is a character like any other; a project that
	// exists is listed.
	resp, e := do(t, "PUT", u+"/v1/projects/made/policy", "application/yaml", "default: ask\n")
	require.Equal(t, 200, resp.StatusCode, e.Error)
	for _, path := range []string{"/v1/agents?project=made", "/v1/sessions?project=made", "/v1/agents?project=default"} {
		resp, e = do(t, "GET", u+path, "", "")
		require.Equal(t, 200, resp.StatusCode, "%s: %s", path, e.Error)
	}
	resp, e = do(t, "POST", u+"/v1/sessions/done/commands", js, `{"kind":"message","payload":{"message":"\ud83d\ude00"}}`)
	require.Equal(t, 409, resp.StatusCode, "past the body checks to the stopped session: %s", e.Error)
}

// TestOneContentType: a body typed twice is ambiguous and refused.
func TestOneContentType(t *testing.T) {
	srv := server(t)
	req, err := http.NewRequest("POST", srv.URL+"/v1/sessions", strings.NewReader(`{"message":"x"}`))
	require.NoError(t, err)
	req.Header.Add("Content-Type", "application/json")
	req.Header.Add("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	r, e := do(t, "GET", srv.URL+"/v1/sessions?agent=Not_A_Name", "", "")
	require.Equal(t, http.StatusBadRequest, r.StatusCode, e.Error)
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// TestStreamAcceptLists: a client listing text/event-stream among other
// types gets the stream.
func TestStreamAcceptLists(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream":                       true,
		"text/event-stream; charset=utf-8":        true,
		"application/json, text/event-stream":     true,
		"text/event-stream;q=0, application/json": false,
		"application/json":                        false,
		"":                                        false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		require.Equal(t, want, wantsStream(r), accept)
	}
}

// TestUnencodableIsA500: a value that cannot be encoded is a 500, not a
// 200 with an empty body.
func TestUnencodableIsA500(t *testing.T) {
	w := httptest.NewRecorder()
	writeJSON(w, http.StatusOK, map[string]any{"x": math.NaN()})
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Contains(t, w.Body.String(), `"code":"internal"`)
	w = httptest.NewRecorder()
	writeJSON(w, http.StatusOK, map[string]any{"x": 1})
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, "{\"x\":1}\n", w.Body.String())
}
