package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestEveryCallIsAuthenticated: without a valid token every route but the
// health check is a 401 saying what to do.
func TestEveryCallIsAuthenticated(t *testing.T) {
	resp, err := http.Get(shared.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, token := range []string{"", "pdk_nope", "pdk_AAAAAAAAAAAA_" + strings.Repeat("A", 43), adminToken + "x"} {
		for _, path := range []string{"/v1/sessions", "/v1/approvals", "/v1/agents", "/v1/audit/export", "/v1/users", "/v1/whoami"} {
			req, _ := http.NewRequest(http.MethodGet, shared.URL+path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s with %q", path, token)
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
		}
	}
	code, out := paddockAs(t, "", "sessions", "ls")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "paddock login")
}

// TestProjectsScopeEverything: a user sees and touches only their
// projects' sessions; another project's are not found (the same answer as
// a session that does not exist), whatever the route; roles narrow what a
// member may do; revoking a user stops their tokens and their sessions.
func TestProjectsScopeEverything(t *testing.T) {
	ctx := context.Background()
	alpha, beta := unique("alpha"), unique("beta")
	ann, bea, aud := unique("ann"), unique("bea"), unique("aud")
	code, out := paddock(t, "projects", "create", alpha)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "paddock members add "+alpha)
	// A project created, with nothing in it yet, exists: its policy is the default.
	_, err := api.Projects().Policy(ctx, alpha)
	require.NoError(t, err, "a created project's policy")
	for _, u := range []string{ann, bea, aud} {
		code, out = paddock(t, "users", "create", u)
		require.Equal(t, 0, code, out)
	}
	member(t, beta, bea, identity.Member)
	for _, m := range []struct{ user, role string }{{ann, "member"}, {aud, "auditor"}} {
		code, out = paddock(t, "members", "add", alpha, m.user, "--role", m.role)
		require.Equal(t, 0, code, out)
	}
	code, out = paddock(t, "members", "add", alpha, bea, "--role", "owner")
	require.Equal(t, 2, code, out)
	code, annToken := paddock(t, "tokens", "create", "--user", ann, "--quiet")
	require.Equal(t, 0, code, annToken)
	annToken = strings.TrimSpace(annToken)
	_, asBea := tokenOf(t, bea)
	_, asAud := tokenOf(t, aud)
	asAnn := client.New(shared.URL).WithToken(annToken)

	x, err := asAnn.Sessions().Create(ctx, wire.CreateRequest{Project: alpha, Model: script(t, "work.yaml"), Message: "process the notes"})
	require.NoError(t, err)
	require.Equal(t, ann, x.CreatedBy.ID, "the session records its requester")
	waitStatus(t, x.ID, session.StatusAwaiting)

	// Another project's session does not exist for bea, on every route.
	missing := "no-such-session"
	for _, id := range []string{x.ID, missing} {
		_, err := asBea.Sessions().Get(ctx, id)
		require.Equal(t, http.StatusNotFound, apiStatus(t, err))
		_, err = asBea.Sessions().Events(ctx, id, 0)
		require.Equal(t, http.StatusNotFound, apiStatus(t, err))
		_, err = asBea.Audit().Log(ctx, id, false)
		require.Equal(t, http.StatusNotFound, apiStatus(t, err))
		_, err = asBea.Review().Diff(ctx, id)
		require.Equal(t, http.StatusNotFound, apiStatus(t, err))
		_, err = asBea.Sessions().Send(ctx, id, wire.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"hi"}`)})
		require.Equal(t, http.StatusNotFound, apiStatus(t, err))
	}
	_, err = asBea.Sessions().Get(ctx, x.ID)
	_, errMissing := asBea.Sessions().Get(ctx, missing)
	require.Equal(t, strings.Replace(errMissing.Error(), missing, x.ID, 1), err.Error(), "no hint that it exists")
	list, err := asBea.Sessions().List(ctx, session.Filter{})
	require.NoError(t, err)
	for _, s := range list {
		require.NotEqual(t, x.ID, s.ID)
	}
	_, err = asBea.Sessions().Create(ctx, wire.CreateRequest{Project: alpha, Model: "replay/demo", Message: "x"})
	require.Equal(t, http.StatusNotFound, apiStatus(t, err), "no role in alpha: it does not exist for bea")
	var exported strings.Builder
	require.NoError(t, asBea.Audit().Export(ctx, &exported, "jsonl", time.Time{}, false))
	require.NotContains(t, exported.String(), x.ID, "an export shows only the caller's projects")

	// Ann sees it; the auditor reads its log but may not steer it.
	list, err = asAnn.Sessions().List(ctx, session.Filter{})
	require.NoError(t, err)
	require.True(t, hasSession(list, x.ID))
	_, err = asAud.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	_, err = asAud.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"hi"}`)})
	require.Equal(t, http.StatusForbidden, apiStatus(t, err))
	_, err = asAnn.Audit().Log(ctx, x.ID, false)
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "a member is no auditor")

	// Tokens: a user mints their own, not others'; administrators only
	// manage users and projects.
	_, err = asAnn.Access().CreateToken(ctx, wire.NewToken{User: bea})
	require.Equal(t, http.StatusForbidden, apiStatus(t, err))
	_, err = asAnn.Access().CreateUser(ctx, unique("eve"), false)
	require.Equal(t, http.StatusForbidden, apiStatus(t, err))
	w, err := asAnn.Access().Whoami(ctx)
	require.NoError(t, err)
	require.Equal(t, ann, w.User)
	require.Equal(t, []identity.Membership{{Project: alpha, User: ann, Role: identity.Member}}, w.Projects)

	// Revoking ann stops her live session and her tokens.
	code, out = paddock(t, "admin", "revoke", "--user", ann)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, x.ID)
	waitStatus(t, x.ID, session.StatusStopped)
	_, err = asAnn.Sessions().List(ctx, session.Filter{})
	require.Equal(t, http.StatusUnauthorized, apiStatus(t, err))
	log, err := api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	annID, _, err := identity.ParseToken(annToken)
	require.NoError(t, err)
	require.Equal(t, "operator:"+ann, log[0].Meta["createdBy"])
	require.Equal(t, "token:"+annID, log[0].Meta["createdVia"], "the frame records how the requester authenticated")
	found := false
	for _, e := range log {
		found = found || strings.Contains(e.Identity, "operator:tester") && e.Kind == "command" && strings.Contains(strings.Join(mapValues(e.Meta), " "), "stop")
	}
	require.True(t, found, "the log records who revoked it")

	// Every change of who may do what is in the access log, with who
	// made it and how they authenticated; only administrators read it.
	access, err := api.Audit().AccessLog(ctx)
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, e := range access {
		if e.Meta["user"] == ann || e.Meta["project"] == alpha {
			kinds[e.Kind] = true
			require.Equal(t, "operator:tester", e.Identity)
			require.True(t, strings.HasPrefix(e.Meta["authenticatedBy"], "token:"), "%+v", e)
		}
	}
	for _, k := range []string{"project_created", "user_created", "member_set", "token_created", "user_revoked"} {
		require.True(t, kinds[k], "access log lacks %s: %v", k, kinds)
	}
	_, err = asBea.Audit().AccessLog(ctx)
	require.Equal(t, http.StatusForbidden, apiStatus(t, err))
	reports, err := api.Audit().Verify(ctx, "")
	require.NoError(t, err)
	// Other tests share the server and may add to the access log between
	// the two reads: it only grows, so the verified log holds at least
	// what was read.
	verified := false
	for _, r := range reports {
		if r.SessionID == audit.AccessLog {
			verified = r.OK && r.Entries >= len(access)
			require.True(t, verified, "the access log verifies with the rest: %+v, %d entries read before", r, len(access))
		}
	}
	require.True(t, verified, "the access log is among the verified logs")
}

func hasSession(list []session.Session, id string) bool {
	for _, s := range list {
		if s.ID == id {
			return true
		}
	}
	return false
}

// paddockAs runs the CLI against the shared server with token.
func paddockAs(t *testing.T, token string, args ...string) (int, string) {
	t.Helper()
	return paddockEnv(t, map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": token, "PADDOCK_DATA_DIR": t.TempDir()}, args...)
}

// TestPassthroughCredentials: an agent that acts with the requester's
// credentials waits at the door for them; only the requester may give
// them (from standard input); commands get them in their environment, the
// transcript shows their names, not their values, nothing in the data
// directory's databases holds them in clear text, and they are deleted
// when the session ends.
func TestPassthroughCredentials(t *testing.T) {
	ctx := context.Background()
	project := unique("deploys")
	cara := unique("cara")
	member(t, project, cara, identity.Member)
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: allow\ncommands:\n  allow: [echo, printf, wc]\n"))
	require.NoError(t, err)
	caraToken, asCara := tokenOf(t, cara)
	name := unique("deployer")
	_, err = api.Projects().Apply(ctx, []byte("name: "+name+"\nproject: "+project+"\nmodel: "+script(t, "credentials.yaml")+
		"\ntools: [run_command]\nenvironment:\n  credentials: [DEPLOY_TOKEN]\n"))
	require.NoError(t, err)
	x, err := asCara.Sessions().Create(ctx, wire.CreateRequest{Project: project, Agent: name, Message: "deploy"})
	require.NoError(t, err)
	require.Contains(t, x.AmbientStatus, "awaiting_credentials")

	value := "dpl-" + unique("Zq7Rk2Lm9Xv4")
	_, err = api.Gates().SetCredentials(ctx, x.ID, map[string]string{"DEPLOY_TOKEN": value})
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "an administrator may not give another's credentials")
	_, err = asCara.Gates().SetCredentials(ctx, x.ID, map[string]string{"OTHER": value})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err))

	var out strings.Builder
	env := map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": caraToken, "PADDOCK_DATA_DIR": t.TempDir()}
	code := cli.Run(ctx, []string{"sessions", "credentials", x.ID}, cli.IO{Server: app.CLI, In: strings.NewReader(value + "\n"), Out: &out, Err: &out, Getenv: func(k string) string { return env[k] }})
	require.Equal(t, 0, code, out.String())
	require.NotContains(t, out.String(), value)
	turnApproving(t, asCara, x.ID, "the turn, the command approved by cara")

	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	var transcript strings.Builder
	for _, e := range events {
		transcript.Write(e.Data)
	}
	require.NotContains(t, transcript.String(), value)
	require.Contains(t, transcript.String(), "token is [REDACTED:credential DEPLOY_TOKEN]")
	require.Contains(t, transcript.String(), strconv.Itoa(len(value)), "the command had the value in its environment")

	send(t, x.ID, session.KindStop, session.StopPayload{Reason: "deployed"})
	waitStatus(t, x.ID, session.StatusStopped)
	db := openLive(t)
	defer db.Close()
	var left int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM session_credentials WHERE session_id = ?`, x.ID).Scan(&left))
	require.Zero(t, left, "deleted when the session ends")
	for _, f := range []string{"paddock.db", "paddock.db-wal", "temporal.db", "temporal.db-wal"} {
		if _, err := os.Stat(filepath.Join(sharedDir, f)); err == nil {
			require.Empty(t, scanFile(t, filepath.Join(sharedDir, f), []string{value}), "%s holds the credential in clear text", f)
		}
	}
}

// TestIdentityChoice: an agent whose requester chooses its identity waits
// for the choice; as the project's service identity its commands get the
// credentials the project's admin set (never the requester's), and as the
// requester it waits for theirs. Only the requester chooses.
func TestIdentityChoice(t *testing.T) {
	ctx := context.Background()
	project := unique("choices")
	dana := unique("dana")
	member(t, project, dana, identity.Member)
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: allow\ncommands:\n  allow: [echo, printf, wc]\n"))
	require.NoError(t, err)
	danaToken, asDana := tokenOf(t, dana)
	name := unique("chooser")
	_, err = api.Projects().Apply(ctx, []byte("name: "+name+"\nproject: "+project+"\nmodel: "+script(t, "credentials.yaml")+
		"\ntools: [run_command]\nidentity: ask\nenvironment:\n  credentials: [DEPLOY_TOKEN]\n"))
	require.NoError(t, err)

	serviceValue := "svc-" + unique("Hq4Wn8Tz")
	var out strings.Builder
	code := cli.Run(ctx, []string{"projects", "credentials", project, "DEPLOY_TOKEN"}, cli.IO{Server: app.CLI, In: strings.NewReader(serviceValue + "\n"), Out: &out, Err: &out,
		Getenv: func(k string) string {
			return map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": adminToken}[k]
		}})
	require.Equal(t, 0, code, out.String())
	require.NotContains(t, out.String(), serviceValue)

	x, err := asDana.Sessions().Create(ctx, wire.CreateRequest{Project: project, Agent: name, Message: "deploy"})
	require.NoError(t, err)
	require.Contains(t, x.AmbientStatus, "awaiting_identity")
	_, err = api.Gates().ChooseIdentity(ctx, x.ID, "service")
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "only the requester chooses")
	code, got := paddockAs(t, danaToken, "sessions", "identity", x.ID, "--as", "service")
	require.Equal(t, 0, code, got)
	turnApproving(t, asDana, x.ID, "the turn, acting as the service identity")
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	var transcript strings.Builder
	for _, e := range events {
		transcript.Write(e.Data)
	}
	require.NotContains(t, transcript.String(), serviceValue)
	require.Contains(t, transcript.String(), strconv.Itoa(len(serviceValue)), "the command had the service credential")
	require.Contains(t, transcript.String(), "acting as project "+project+"'s service identity")

	y, err := asDana.Sessions().Create(ctx, wire.CreateRequest{Project: project, Agent: name, Message: "deploy as me"})
	require.NoError(t, err)
	p, err := asDana.Gates().ChooseIdentity(ctx, y.ID, "requester")
	require.NoError(t, err)
	require.Equal(t, "awaiting_credentials", p.Reason, "acting as the requester, it waits for her credentials")
	_, err = asDana.Gates().ChooseIdentity(ctx, y.ID, "service")
	require.Error(t, err, "chosen once")
	send(t, y.ID, session.KindStop, session.StopPayload{})
}

// turnApproving waits for session id's turn to end, c approving every
// call that asks on the way.
func turnApproving(t *testing.T, c *client.Client, id, what string) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, what, func() (bool, error) {
		s, err := c.Sessions().Get(ctx, id)
		if s.Status == session.StatusAwaiting || err != nil {
			return true, err
		}
		aps, _ := c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: id, Status: session.ApprovalPending})
		for _, ap := range aps {
			_, err = c.Gates().Decide(ctx, ap.ID, true, "")
		}
		return false, err
	})
}
