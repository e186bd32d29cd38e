package app_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/forge/forgetest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestSessionsOnARemoteRepository: a project's admin grants a git
// server's repositories through a connection (the credential read from
// standard input); a session on one of them starts from a pull request's
// head, fetched by Paddock into the project's mirror, and its diff holds
// only the agent's work; a second session reuses the mirror. A repository
// the connection does not grant, a ref that does not resolve, a forge
// that is down and a revoked connection are refused at creation with the
// reason, while the live session keeps its copy; the credential is
// nowhere in the data directory.
func TestSessionsOnARemoteRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	const token = "forge-token-6c1e9b27d4a85f30"
	srv := forgetest.New(t, "paddock", token)
	bare := srv.Repo(t, "team/app", map[string]string{"README.md": "# App\n", "main.go": "package main\n"})
	pr := forgetest.Commit(t, bare, "fix", map[string]string{"fix.txt": "the pull request's change\n"}, "refs/pull/3/head")
	srv.Repo(t, "other/secret", map[string]string{"x": "y\n"})

	project := unique("forge")
	require.NoError(t, api.Access().CreateProject(ctx, project))
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: allow\n"))
	require.NoError(t, err)
	code, out := paddockIn(t, token+"\n", "connections", "add", "git", "--project", project, "--kind", "gitea", "--url", srv.URL, "--repo", "team/*")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "connection git added to project "+project)
	require.NotContains(t, out, token)
	code, out = paddockIn(t, "", "connections", "ls", "--project", project)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "team/*")
	require.NotContains(t, out, token)

	model := scriptText(t, unique("remote-work")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: agent.txt, content: "the agent's work\n"}
  - text: "Wrote agent.txt."
  - text: "Going on."
`)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: model, Message: "work on the pull request", Repo: "team/app", Ref: "#3"})
	require.NoError(t, err)
	require.NotNil(t, x.Remote)
	require.Equal(t, pr, x.Remote.Commit, "the session starts from the pull request's head")
	require.Equal(t, srv.URL+"/team/app", x.Repo)
	waitFor(t, "the first turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	x, err = api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.Empty(t, x.Error)
	require.Equal(t, pr, x.BaseCommit)
	data, err := os.ReadFile(filepath.Join(x.Workdir, "fix.txt"))
	require.NoError(t, err)
	require.Equal(t, "the pull request's change\n", string(data))
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, 1, "the pull request's own change is the base, not the agent's diff")
	require.Equal(t, "agent.txt", d.Files[0].Path)

	// A second session on the same repository fetches into the same
	// mirror, and nothing new comes.
	packs := func() int { // objects and packs in the mirror
		n := 0
		_ = filepath.WalkDir(filepath.Join(sharedDir, "mirrors", project, "git", "team", "app.git", "objects"), func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return nil
		})
		return n
	}
	before := packs()
	require.Positive(t, before)
	y, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: script(t, "empty.yaml"), Message: "hello", Repo: srv.URL + "/team/app.git"})
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(forgetest.Git(t, bare, "rev-parse", "refs/heads/main")), y.Remote.Commit, "the default branch")
	require.Equal(t, before, packs(), "an incremental fetch with nothing new")
	waitStatus(t, y.ID, session.StatusAwaiting)

	refused := func(req wire.CreateRequest, status int, says string) {
		t.Helper()
		req.Project, req.Model, req.Message = project, model, "x"
		_, err := api.Sessions().Create(ctx, req)
		require.Error(t, err)
		require.Equal(t, status, statusOf(err), "%v", err)
		require.Contains(t, err.Error(), says)
		require.NotContains(t, err.Error(), token)
	}
	refused(wire.CreateRequest{Repo: srv.URL + "/other/secret"}, http.StatusForbidden, "no connection grants it")
	refused(wire.CreateRequest{Repo: "team/app", Ref: "no-such-branch"}, http.StatusBadRequest, "no ref no-such-branch")
	refused(wire.CreateRequest{Repo: "team/app", Ref: "../../etc/passwd"}, http.StatusBadRequest, "want a branch")
	refused(wire.CreateRequest{Repo: "https://paddock:" + token + "@" + strings.TrimPrefix(srv.URL, "http://") + "/team/app"}, http.StatusBadRequest, "holds a user or password")
	srv.SetDown(true)
	refused(wire.CreateRequest{Repo: "team/app"}, http.StatusServiceUnavailable, "try again when it answers")
	srv.SetDown(false)

	code, out = paddockIn(t, "", "connections", "revoke", "git", "--project", project)
	require.Equal(t, 0, code, out)
	refused(wire.CreateRequest{Repo: srv.URL + "/team/app"}, http.StatusForbidden, "revoked")
	// The live session keeps its copy and goes on.
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "go on"})
	waitFor(t, "the live session's next turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status.Settled(), err
	})

	files := 0
	require.NoError(t, filepath.WalkDir(sharedDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p == filepath.Join(sharedDir, "bin") {
			return filepath.SkipDir // this test binary, the token among its constants
		}
		if err != nil || !d.Type().IsRegular() {
			return nil // files of other tests come and go
		}
		files++
		for _, n := range scanFile(t, p, []string{token}) {
			t.Errorf("%s holds %.12s… in clear text", strings.TrimPrefix(p, sharedDir), n)
		}
		return nil
	}))
	require.Greater(t, files, 3)
}

// statusOf is the HTTP status an API error carries.
func statusOf(err error) int {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// TestAcceptOpensAPullRequestOnGitea: a session on a repository of a real
// Gitea (built from the Go module proxy, on loopback, its own SQLite) is
// accepted by a person: Paddock, not the agent, pushes the accepted
// snapshot as branch paddock/ID and opens a pull request from it into the
// ref's branch, its commit carrying the Paddock-Session and Accepted-By
// trailers; the session records the pull request. A second acceptance of
// later work moves the same branch forward and finds the same pull
// request open.
func TestAcceptOpensAPullRequestOnGitea(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	g := forgetest.NewGitea(t)
	g.API(t, http.MethodPost, "/user/repos", map[string]any{"name": "app", "auto_init": true, "default_branch": "main"}, nil)

	project := unique("gitea")
	require.NoError(t, api.Access().CreateProject(ctx, project))
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: allow\n"))
	require.NoError(t, err)
	_, err = api.Projects().AddConnection(ctx, project, wire.ConnectionRequest{Name: "gitea", Kind: "gitea", URL: g.URL, Repositories: []string{g.User + "/*"}, Credential: g.Token})
	require.NoError(t, err)

	model := scriptText(t, unique("gitea-work")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: feature.txt, content: "a feature\n"}
  - text: "Wrote feature.txt."
  - toolCalls:
      - name: write_file
        args: {path: more.txt, content: "more\n"}
  - text: "Wrote more.txt."
`)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: model, Message: "add a feature", Repo: g.User + "/app", Ref: "main"})
	require.NoError(t, err)
	accept := func(turns int) session.Session {
		t.Helper()
		waitFor(t, "the turn", func() (bool, error) {
			ts, err := api.Sessions().Turns(ctx, x.ID)
			return len(ts) == turns && ts[turns-1].Status.Settled(), err
		})
		d, err := api.Review().Diff(ctx, x.ID)
		require.NoError(t, err)
		require.Len(t, d.Files, 1)
		got, err := api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: session.AsCommit, Base: d.Base, Tree: d.Tree})
		require.NoError(t, err)
		return got
	}
	accept(1)
	var prs []struct {
		Number int64  `json:"number"`
		State  string `json:"state"`
		Body   string `json:"body"`
		Head   struct {
			Ref string `json:"ref"`
			Sha string `json:"sha"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	}
	g.API(t, http.MethodGet, "/repos/"+g.User+"/app/pulls?state=all", nil, &prs)
	require.Len(t, prs, 1)
	require.Equal(t, "paddock/"+x.ID, prs[0].Head.Ref)
	require.Equal(t, "main", prs[0].Base.Ref)
	require.Contains(t, prs[0].Body, "Paddock-Session: "+x.ID)
	var commit struct {
		Commit struct {
			Message string `json:"message"`
		} `json:"commit"`
	}
	g.API(t, http.MethodGet, "/repos/"+g.User+"/app/git/commits/"+prs[0].Head.Sha, nil, &commit)
	require.Contains(t, commit.Commit.Message, "Paddock-Session: "+x.ID)
	require.Contains(t, commit.Commit.Message, "Accepted-By: operator:tester")
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	require.Contains(t, eventText(events), fmt.Sprintf("pull request #%d", prs[0].Number), "the session records the pull request")

	// Later work, accepted again: the same branch moves forward, the same
	// pull request stays the one.
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "more"})
	accept(2)
	g.API(t, http.MethodGet, "/repos/"+g.User+"/app/pulls?state=all", nil, &prs)
	require.Len(t, prs, 1)
	var files []struct {
		Filename string `json:"filename"`
	}
	g.API(t, http.MethodGet, fmt.Sprintf("/repos/%s/app/pulls/%d/files", g.User, prs[0].Number), nil, &files)
	require.Len(t, files, 2, "both acceptances are on the pull request")
}

// eventText is every event's data, for a search.
func eventText(events []session.Event) string {
	var b strings.Builder
	for _, e := range events {
		b.Write(e.Data)
		b.WriteByte('\n')
	}
	return b.String()
}
