package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/wire"
)

// fakeTemporal accepts the signals Send and CreateSession give, so the
// probes reach past notify without an engine.
type fakeTemporal struct{ client.Client }

type fakeRun struct{ client.WorkflowRun }

func (fakeTemporal) SignalWithStartWorkflow(context.Context, string, string, any, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return fakeRun{}, nil
}

type attackEnv struct {
	url    string
	admin  string
	st     *sqlstore.Store
	server *Server
}

// attackServer is server(t) with a fake Temporal and a provider registry,
// and no token injection: every request names its caller.
func attackServer(t *testing.T) *attackEnv {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := provider.NewRegistry()
	reg.Register("replay", func(string) (provider.Provider, error) { return nil, nil })
	svc := &engine.Service{Store: st, Access: &access.Service{Store: st}, Temporal: fakeTemporal{}, Providers: reg}
	svc.Audit = &auditlog.Service{Store: st, Access: svc.Access, Sealer: svc.Sealer}
	dir := t.TempDir()
	_, err = svc.Access.Bootstrap(context.Background(), dir, "tester")
	require.NoError(t, err)
	token, err := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	require.NoError(t, err)
	s := &Server{Service: svc, Logger: slog.New(slog.DiscardHandler), BodyTimeout: time.Second}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &attackEnv{url: srv.URL, admin: strings.TrimSpace(string(token)), st: st, server: s}
}

func (e *attackEnv) call(t *testing.T, token, method, path, ctype, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stopRecorded says a stop command was recorded for session id.
func (e *attackEnv) stopRecorded(t *testing.T, id string) bool {
	t.Helper()
	cmds, err := e.st.ListCommands(context.Background(), id)
	require.NoError(t, err)
	for _, c := range cmds {
		if c.Kind == session.KindStop {
			return true
		}
	}
	return false
}

// user creates a user and returns a token of theirs.
func (e *attackEnv) user(t *testing.T, name string) string {
	t.Helper()
	code, body := e.call(t, e.admin, "POST", "/v1/users", "application/json", `{"name":"`+name+`"}`)
	require.Equal(t, 201, code, body)
	code, body = e.call(t, e.admin, "POST", "/v1/tokens", "application/json", `{"user":"`+name+`"}`)
	require.Equal(t, 201, code, body)
	var res wire.NewTokenResult
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	return res.Secret
}

func (e *attackEnv) project(t *testing.T, name string) {
	t.Helper()
	code, body := e.call(t, e.admin, "POST", "/v1/projects", "application/json", `{"name":"`+name+`"}`)
	require.Equal(t, 201, code, body)
}

func (e *attackEnv) member(t *testing.T, project, user, role string) {
	t.Helper()
	code, body := e.call(t, e.admin, "PUT", "/v1/projects/"+project+"/members/"+user, "application/json", `{"role":"`+role+`"}`)
	require.Equal(t, 200, code, body)
}

func (e *attackEnv) session(t *testing.T, id, project, key string) {
	t.Helper()
	_, _, err := e.st.CreateSession(context.Background(), store.NewSession{ID: id, Project: project, IdempotencyKey: key,
		Agent:     spec.Record{Project: project, Name: "a", Spec: []byte(`{}`), Digest: "d"},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "tester"}, StartKind: session.KindStart})
	require.NoError(t, err)
}

// Session idempotency keys are global: a caller who may start sessions in
// their own project, reusing a key someone used in a project hidden from
// them, is answered 409 with the hidden session's ID (and its existence).
func TestAttackIdempotencyKeyCrossesProjects(t *testing.T) {
	e := attackServer(t)
	e.project(t, "secret")
	e.project(t, "mine")
	e.session(t, "hidden-session-id", "secret", "nightly-build")
	eve := e.user(t, "eve")
	e.member(t, "mine", "eve", "guest")

	code, body := e.call(t, eve, "POST", "/v1/sessions", "application/json", `{"project":"mine","message":"hi","idempotencyKey":"nightly-build"}`)
	require.NotContains(t, body, "hidden-session-id", "a session of a project eve has no role in is named to her")
	require.Equal(t, 201, code, "a key is the caller's own (per project and caller): eve's session is created: %s", body)
}

// An operator who may steer a session can pre-empt its revocation:
// RevokeSession sent its stop under the guessable key "revoke/ID", and took
// the conflict with the attacker's command as "already ended". Now the key
// is reserved (the attempt is a 400) and only an ended session is let be.
func TestAttackRevocationPreempted(t *testing.T) {
	e := attackServer(t)
	e.project(t, "p")
	mallory := e.user(t, "mallory")
	e.member(t, "p", "mallory", "member")
	e.session(t, "runaway", "p", "")

	code, body := e.call(t, mallory, "POST", "/v1/sessions/runaway/commands", "application/json",
		`{"kind":"message","payload":{"message":"keep going"},"idempotencyKey":"revoke/runaway"}`)
	require.Equal(t, 400, code, "the revocation's key is the platform's: %s", body)

	code, body = e.call(t, e.admin, "POST", "/v1/sessions/runaway/revoke", "", "")
	t.Logf("revoke: %d %s", code, body)
	stopped := e.stopRecorded(t, "runaway")
	require.True(t, stopped || code != 200, "revoke answered %d (%s) yet recorded no stop command: the session runs on", code, body)
}

// The same pre-emption defeats RevokeUser: the user about to be revoked
// keeps their sessions running, and the admin is told they were stopped.
func TestAttackRevokeUserPreempted(t *testing.T) {
	e := attackServer(t)
	e.project(t, "p")
	mallory := e.user(t, "mallory")
	e.member(t, "p", "mallory", "member")
	code, body := e.call(t, mallory, "POST", "/v1/sessions", "application/json", `{"project":"p","message":"mine"}`)
	require.Equal(t, 201, code, body)
	var x session.Session
	require.NoError(t, json.Unmarshal([]byte(body), &x))
	code, body = e.call(t, mallory, "POST", "/v1/sessions/"+x.ID+"/commands", "application/json",
		`{"kind":"message","payload":{"message":"x"},"idempotencyKey":"revoke/`+x.ID+`"}`)
	require.Equal(t, 400, code, "the revocation's key is the platform's: %s", body)

	code, body = e.call(t, e.admin, "POST", "/v1/users/mallory/revoke", "", "")
	require.Equal(t, 200, code, body)
	require.True(t, e.stopRecorded(t, x.ID), "revoke-user reported %s, but no stop was recorded for %s", body, x.ID)
}

// GET /v1/sessions?project= checks the project exists before the caller's
// role: a never-made project and one hidden from the caller answer
// different texts.
func TestAttackListSessionsProjectOracle(t *testing.T) {
	e := attackServer(t)
	e.project(t, "secret")
	e.session(t, "x1", "secret", "")
	eve := e.user(t, "eve")

	c1, hidden := e.call(t, eve, "GET", "/v1/sessions?project=secret", "", "")
	c2, missing := e.call(t, eve, "GET", "/v1/sessions?project=never-made", "", "")
	require.Equal(t, c2, c1)
	require.Equal(t, strings.ReplaceAll(missing, "never-made", "secret"), hidden, "hidden and missing projects must look alike")
}

// GET /v1/parked?project= checks existence and never the caller's role:
// a hidden project is a 200 (empty), a never-made one a 404.
func TestAttackParkedProjectOracle(t *testing.T) {
	e := attackServer(t)
	e.project(t, "secret")
	e.session(t, "x1", "secret", "")
	eve := e.user(t, "eve")

	c1, hidden := e.call(t, eve, "GET", "/v1/parked?project=secret", "", "")
	c2, missing := e.call(t, eve, "GET", "/v1/parked?project=never-made", "", "")
	require.Equal(t, c2, c1, "hidden: %s / missing: %s", hidden, missing)
	require.Equal(t, strings.ReplaceAll(missing, "never-made", "secret"), hidden)
}

// Trigger names are global and checkTriggers names the owner: a project
// admin applying an agent learns another (hidden) project's name and agent.
func TestAttackTriggerNameLeaksHiddenAgent(t *testing.T) {
	e := attackServer(t)
	e.project(t, "secret")
	e.project(t, "mine")
	_, err := e.st.ApplyAgents(context.Background(), []spec.Record{{Project: "secret", Name: "payroll-bot", Digest: "d",
		Spec: []byte(`{"name":"payroll-bot","project":"secret","model":"replay/demo","triggers":[{"name":"deploy","message":"go"}]}`)}})
	require.NoError(t, err)
	eve := e.user(t, "eve")
	e.member(t, "mine", "eve", "admin")

	code, body := e.call(t, eve, "POST", "/v1/agents", "application/yaml",
		"name: mybot\nproject: mine\nmodel: replay/demo\ntriggers:\n  - name: deploy\n    message: hi\n")
	t.Logf("%d %s", code, body)
	require.NotContains(t, body, "payroll-bot", "a hidden project's agent is named")
	require.NotContains(t, body, "secret", "a hidden project is named")
}

// A token holder mints themselves a token of up to 366 days: a short-lived
// token (1h) outlives its expiry and its revocation.
func TestAttackTokenOutlivesParent(t *testing.T) {
	e := attackServer(t)
	code, body := e.call(t, e.admin, "POST", "/v1/users", "application/json", `{"name":"contractor"}`)
	require.Equal(t, 201, code, body)
	code, body = e.call(t, e.admin, "POST", "/v1/tokens", "application/json", `{"user":"contractor","expires":"1h"}`)
	require.Equal(t, 201, code, body)
	var short wire.NewTokenResult
	require.NoError(t, json.Unmarshal([]byte(body), &short))

	code, body = e.call(t, short.Secret, "POST", "/v1/tokens", "application/json", `{"expires":"8700h"}`)
	require.Equal(t, 201, code, body)
	var long wire.NewTokenResult
	require.NoError(t, json.Unmarshal([]byte(body), &long))

	code, body = e.call(t, e.admin, "POST", "/v1/tokens/"+short.ID+"/revoke", "", "")
	require.Equal(t, 204, code, body)
	code, _ = e.call(t, short.Secret, "GET", "/v1/whoami", "", "")
	require.Equal(t, 401, code)
	code, body = e.call(t, long.Secret, "GET", "/v1/whoami", "", "")
	require.NotEqual(t, 200, code, "a token minted by a revoked 1h token still works, for a year: %s", body)
}

// POST /v1/sessions with approver answers differently for a name that is
// no user and for a user with no role in the project: a guest enumerates
// the server's users (and finds its administrators, who pass anywhere).
func TestAttackApproverEnumeratesUsers(t *testing.T) {
	e := attackServer(t)
	e.project(t, "mine")
	e.project(t, "secret")
	eve := e.user(t, "eve")
	e.user(t, "ceo")
	e.member(t, "secret", "ceo", "member")
	e.member(t, "mine", "eve", "guest")

	_, exists := e.call(t, eve, "POST", "/v1/sessions", "application/json", `{"project":"mine","message":"x","approver":"ceo"}`)
	_, missing := e.call(t, eve, "POST", "/v1/sessions", "application/json", `{"project":"mine","message":"x","approver":"nobody"}`)
	require.Equal(t, strings.ReplaceAll(missing, "nobody", "ceo"), exists, "an existing user and none must look alike")
}
