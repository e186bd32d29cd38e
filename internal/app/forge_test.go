package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/forge/forgetest"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
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
	// A member who is not the project's admin neither adds nor revokes one.
	dev := unique("dev")
	member(t, project, dev, identity.Member)
	_, asDev := tokenOf(t, dev)
	_, err = asDev.Projects().AddConnection(ctx, project, wire.ConnectionRequest{Name: "mine", Kind: "git", URL: srv.URL, Repositories: []string{"*"}, Credential: "x"})
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "%v", err)
	_, err = asDev.Projects().RevokeConnection(ctx, project, "git")
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "%v", err)

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
	// The web app names the repository, the ref, and the pull request the
	// session is bound to; the project's page lists the connection.
	html := page(t, "/sessions/"+x.ID)
	require.Contains(t, html, srv.URL+"/team/app</code> at <code>#3</code>")
	require.Contains(t, html, ">pull request #3</a> (held)")
	html = page(t, "/admin/projects/"+project)
	require.Contains(t, html, "<code>"+srv.URL+"</code>")
	require.NotContains(t, html, token)

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
		require.Equal(t, status, apiStatus(t, err), "%v", err)
		require.Contains(t, err.Error(), says)
		require.NotContains(t, err.Error(), token)
	}
	refused(wire.CreateRequest{Repo: srv.URL + "/other/secret"}, http.StatusBadRequest, "no connection grants it")
	refused(wire.CreateRequest{Repo: "team/app", Ref: "no-such-branch"}, http.StatusBadRequest, "no ref no-such-branch")
	refused(wire.CreateRequest{Repo: "team/app", Ref: "../../etc/passwd"}, http.StatusBadRequest, "want a branch")
	refused(wire.CreateRequest{Repo: "https://paddock:" + token + "@" + strings.TrimPrefix(srv.URL, "http://") + "/team/app"}, http.StatusBadRequest, "holds a user or password")
	srv.SetDown(true)
	refused(wire.CreateRequest{Repo: "team/app"}, http.StatusServiceUnavailable, "try again when it answers")
	srv.SetDown(false)

	code, out = paddockIn(t, "", "connections", "revoke", "git", "--project", project)
	require.Equal(t, 0, code, out)
	refused(wire.CreateRequest{Repo: srv.URL + "/team/app"}, http.StatusBadRequest, "revoked")
	// The live session keeps its copy and goes on.
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "go on"})
	waitFor(t, "the live session's next turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status.Settled(), err
	})
	// The name given again, to a narrower grant: the live session's work
	// is not pushed with it.
	_, err = api.Projects().AddConnection(ctx, project, wire.ConnectionRequest{Name: "git", Kind: "gitea", URL: srv.URL, Repositories: []string{"other/*"}, Credential: token})
	require.NoError(t, err)
	d, err = api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	_, err = api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: session.AsCommit, Base: d.Base, Tree: d.Tree})
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "%v", err)
	require.Contains(t, err.Error(), "no longer grants")
	require.NotContains(t, forgetest.Git(t, bare, "branch", "--list", "paddock/*"), x.ID, "nothing was pushed")

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
	waitFor(t, "the second turn", func() (bool, error) {
		ts, err := api.Sessions().Turns(ctx, x.ID)
		return len(ts) == 2 && ts[1].Status.Settled(), err
	})
	code, out := paddock(t, "sessions", "accept", x.ID, "-m", "mine")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "goes to the forge")
	code, out = paddock(t, "sessions", "accept", x.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fmt.Sprintf("accepted 1 file(s) of session %s: pull request #%d", x.ID, prs[0].Number), "the terminal says where it went")
	g.API(t, http.MethodGet, "/repos/"+g.User+"/app/pulls?state=all", nil, &prs)
	require.Len(t, prs, 1)
	var files []struct {
		Filename string `json:"filename"`
	}
	g.API(t, http.MethodGet, fmt.Sprintf("/repos/%s/app/pulls/%d/files", g.User, prs[0].Number), nil, &files)
	require.Len(t, files, 2, "both acceptances are on the pull request")
}

// TestAcceptAsTheLinkedPerson: a person links their own Gitea account to
// a project's connection (`paddock connections link`, the token checked
// with Gitea, which names its holder); the pull request of what they
// accept is then opened as them. A token the forge no longer takes
// leaves the connection's to open it, and the answer says so; a token
// Gitea refuses is never linked; revoking the connection deletes the
// link; the token is never in the data directory in the clear.
func TestAcceptAsTheLinkedPerson(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	g := forgetest.NewGitea(t)
	g.API(t, http.MethodPost, "/user/repos", map[string]any{"name": "app", "auto_init": true, "default_branch": "main"}, nil)
	own := g.NewUser(t, "tessa", "app")
	g.API(t, http.MethodPatch, "/admin/users/tessa", map[string]any{"login_name": "tessa", "source_id": 0, "full_name": "Tessa Quinn"}, nil)

	project := unique("linked")
	require.NoError(t, api.Access().CreateProject(ctx, project))
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: allow\n"))
	require.NoError(t, err)
	_, err = api.Projects().AddConnection(ctx, project, wire.ConnectionRequest{Name: "gitea", Kind: "gitea", URL: g.URL, Repositories: []string{g.User + "/*"}, Credential: g.Token})
	require.NoError(t, err)

	_, err = api.Projects().LinkForge(ctx, project, "gitea", "not-a-token")
	var he *client.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, http.StatusBadRequest, he.Status, "Gitea refused the token: %v", err)
	require.Contains(t, err.Error(), "did not take the credential")
	code, out := paddockIn(t, own+"\n", "connections", "link", "gitea", "--project", project)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "opened as tessa on "+g.URL, "Gitea named the token's holder")
	require.NotContains(t, out, own)

	work := func(file string) session.Session {
		t.Helper()
		model := scriptText(t, unique("linked-work")+".yaml", "steps:\n  - toolCalls:\n      - name: write_file\n        args: {path: "+file+", content: \"x\\n\"}\n  - text: done\n")
		x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: model, Message: "add " + file, Repo: g.User + "/app", Ref: "main"})
		require.NoError(t, err)
		waitFor(t, "the turn", func() (bool, error) {
			ts, err := api.Sessions().Turns(ctx, x.ID)
			return len(ts) == 1 && ts[0].Status.Settled(), err
		})
		return x
	}
	poster := func(branch string) string {
		t.Helper()
		var prs []struct {
			Head struct {
				Ref string `json:"ref"`
			} `json:"head"`
			User struct {
				Login string `json:"login"`
			} `json:"user"`
		}
		g.API(t, http.MethodGet, "/repos/"+g.User+"/app/pulls?state=all", nil, &prs)
		for _, pr := range prs {
			if pr.Head.Ref == branch {
				return pr.User.Login
			}
		}
		t.Fatalf("no pull request from %s", branch)
		return ""
	}
	// pusher is who pushed branch, as Gitea's activity feed records it.
	pusher := func(branch string) (who string) {
		t.Helper()
		waitFor(t, "Gitea's record of the push of "+branch, func() (bool, error) {
			var feed []struct {
				RefName string `json:"ref_name"`
				ActUser struct {
					Login string `json:"login"`
				} `json:"act_user"`
			}
			g.API(t, http.MethodGet, "/repos/"+g.User+"/app/activities/feeds?limit=50", nil, &feed)
			for _, a := range feed {
				if strings.TrimPrefix(a.RefName, "refs/heads/") == branch {
					who = a.ActUser.Login
				}
			}
			return who != "", nil
		})
		return who
	}
	// author is who the commit at branch's head is by, and committed by.
	author := func(branch string) (by, committer string) {
		t.Helper()
		var commits []struct {
			Commit struct {
				Author, Committer struct {
					Name  string `json:"name"`
					Email string `json:"email"`
				}
			} `json:"commit"`
		}
		g.API(t, http.MethodGet, "/repos/"+g.User+"/app/commits?limit=1&stat=false&sha="+url.QueryEscape(branch), nil, &commits)
		require.NotEmpty(t, commits, branch)
		c := commits[0].Commit
		return c.Author.Name + " <" + c.Author.Email + ">", c.Committer.Name + " <" + c.Committer.Email + ">"
	}
	x := work("mine.txt")
	code, out = paddock(t, "sessions", "accept", x.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "pushed as tessa, opened as tessa")
	require.NotContains(t, out, "the commit is Paddock's")
	require.Equal(t, "tessa", poster("paddock/"+x.ID), "the pull request is the person's")
	require.Equal(t, "tessa", pusher("paddock/"+x.ID), "the branch is the person's push")
	by, committer := author("paddock/" + x.ID)
	require.Equal(t, "Tessa Quinn <tessa@example.com>", by, "the commit is by the person, as Gitea names them")
	require.Equal(t, "paddock <paddock@localhost>", committer)

	// The web app shows the link, unlinks it and links again; a token
	// Gitea refuses is a 400 that says so.
	page := "/admin/projects/" + project
	require.Contains(t, webPage(t, adminToken, page), "open as <strong>tessa</strong>")
	require.Contains(t, webForm(t, adminToken, page, page+"/connections/gitea/unlink", url.Values{}), "unlinked")
	require.Contains(t, webPage(t, adminToken, page), `aria-label="link your account on gitea"`)
	status, body, _ := webPost(t, adminToken, page, page+"/connections/gitea/link", url.Values{"credential": {"not-a-token"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "did not take the credential")
	require.Contains(t, webForm(t, adminToken, page, page+"/connections/gitea/link", url.Values{"credential": {own}}), "opened+as+tessa")
	require.NotContains(t, webPage(t, adminToken, page), own)

	// Gitea no longer takes the person's token: the connection's opens
	// the pull request, and the answer says why.
	g.DeleteToken(t, "tessa")
	y := work("theirs.txt")
	code, out = paddock(t, "sessions", "accept", y.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "your linked account tessa could not push it")
	require.Contains(t, out, "your linked account tessa was refused")
	require.Contains(t, out, "the commit is Paddock's, not tessa's")
	by, _ = author("paddock/" + y.ID)
	require.Equal(t, "paddock <paddock@localhost>", by)
	require.Equal(t, g.User, poster("paddock/"+y.ID))
	require.Equal(t, g.User, pusher("paddock/"+y.ID))

	data, err := exec.Command("grep", "-rlF", own, sharedDir).CombinedOutput()
	require.Empty(t, strings.TrimSpace(string(data)), "the person's token in the clear: %v", err)

	_, err = api.Projects().RevokeConnection(ctx, project, "gitea")
	require.NoError(t, err)
	code, out = paddock(t, "connections", "unlink", "gitea", "--project", project)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "no link", "the revocation deleted the link")
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

// TestGitHubPullRequestFlow: the GitHub path, with go-github against
// GitHub's API as its documentation records it (a GitHub Enterprise
// Server's /api/v3 beside git's own smart HTTP): a signed pull_request
// webhook spawns a session on the pull request's head (its ref templated
// from the payload); accepting it pushes branch paddock/ID, opens a pull
// request into the head's branch and comments on the pull request the
// session worked on.
func TestGitHubPullRequestFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	const token = "ghs_recordedFlowToken0123456789"
	srv := forgetest.New(t, "x-access-token", token)
	bare := srv.Repo(t, "octo/app", map[string]string{"README.md": "# App\n"})
	head := forgetest.Commit(t, bare, "feature", map[string]string{"feature.txt": "the contributor's change\n"}, "refs/pull/7/head")

	var mu sync.Mutex
	var created map[string]any
	var comment string
	srv.API = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v3/repos/octo/app/pulls/7":
			_, _ = fmt.Fprintf(w, `{"number":7,"state":"open","html_url":"%s/octo/app/pull/7","head":{"ref":"feature","sha":"%s","repo":{"full_name":"octo/app"}},"base":{"ref":"main","repo":{"full_name":"octo/app"}}}`, srv.URL, head)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v3/repos/octo/app/pulls":
			require.Equal(t, "open", r.URL.Query().Get("state"))
			require.True(t, strings.HasPrefix(r.URL.Query().Get("head"), "octo:paddock/"), r.URL.RawQuery)
			_, _ = w.Write([]byte(`[]`))
		case r.Method == http.MethodPost && r.URL.Path == "/api/v3/repos/octo/app/pulls":
			require.NoError(t, json.NewDecoder(r.Body).Decode(&created))
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"number":8,"state":"open","html_url":"%s/octo/app/pull/8"}`, srv.URL)
		case r.Method == http.MethodPost && r.URL.Path == "/api/v3/repos/octo/app/issues/7/comments":
			var c struct {
				Body string `json:"body"`
			}
			require.NoError(t, json.NewDecoder(r.Body).Decode(&c))
			comment = c.Body
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"id":1,"body":%q}`, c.Body)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"Not Found"}`))
		}
	})

	require.NoError(t, api.Access().CreateProject(ctx, "ghflow"))
	_, err := api.Projects().SetPolicy(ctx, "ghflow", []byte("default: allow\n"))
	require.NoError(t, err)
	_, err = api.Projects().AddConnection(ctx, "ghflow", wire.ConnectionRequest{Name: "ghe", Kind: "github", URL: srv.URL, Repositories: []string{"octo/app"}, Credential: token})
	require.NoError(t, err)
	model := scriptText(t, unique("gh-review")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: review.txt, content: "reviewed\n"}
  - text: "Reviewed the pull request."
`)
	res, err := api.Projects().Apply(ctx, []byte(`name: reviewer
project: ghflow
model: `+model+`
triggers:
  - name: gh-pr
    routing: spawn
    events: [github.pull_request.opened, github.pull_request.synchronize]
    repo: `+srv.URL+`/octo/app
    ref: "#{{.payload.pull_request.number}}"
    message: "Review pull request #{{.payload.pull_request.number}}: {{.payload.pull_request.title}}"
  - name: gh-closed
    events: [github.pull_request.closed]
    repo: `+srv.URL+`/octo/app
    release: true
  - name: gh-review
    routing: bound
    events: [github.pull_request_review_comment.created, github.issue_comment.created, github.check_run.completed]
    repo: `+srv.URL+`/octo/app
    message: "{{.event}}: {{with .payload.comment}}{{.body}}{{end}}{{with .payload.check_run}}{{.conclusion}}{{end}}"
`))
	require.NoError(t, err)
	require.Len(t, res, 1)
	var webhookOf func(trigger, event, delivery string, body []byte) wire.TriggerResult
	webhook := func(trigger, delivery string, body []byte) wire.TriggerResult {
		t.Helper()
		return webhookOf(trigger, "pull_request", delivery, body)
	}
	webhookOf = func(trigger, event, delivery string, body []byte) wire.TriggerResult {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, shared.URL+"/v1/projects/ghflow/triggers/"+trigger, bytes.NewReader(body))
		require.NoError(t, err)
		mac := hmac.New(sha256.New, []byte(triggerSecret))
		mac.Write(body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", delivery)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var tr wire.TriggerResult
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
		require.Less(t, resp.StatusCode, 300, "%+v", tr)
		return tr
	}
	tr := webhook("gh-pr", "gh-delivery-1", []byte(`{"action":"opened","number":7,"pull_request":{"number":7,"title":"Add a feature","head":{"ref":"feature","sha":"`+head+`"}},"repository":{"full_name":"octo/app"}}`))
	require.NotEmpty(t, tr.SessionID)

	x, err := api.Sessions().Get(ctx, tr.SessionID)
	require.NoError(t, err)
	require.NotNil(t, x.Remote)
	require.Equal(t, "#7", x.Remote.Ref)
	require.Equal(t, head, x.Remote.Commit, "the session starts from the pull request's head")
	waitFor(t, "the review turn", func() (bool, error) {
		ts, err := api.Sessions().Turns(ctx, x.ID)
		return len(ts) == 1 && ts[0].Status.Settled(), err
	})
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, d.Files, 1)
	_, err = api.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: session.AsCommit, Base: d.Base, Tree: d.Tree})
	require.NoError(t, err)

	mu.Lock()
	require.Equal(t, "paddock/"+x.ID, created["head"])
	require.Equal(t, "feature", created["base"], "into the pull request's own branch")
	require.Contains(t, created["body"], "Accepted-By: operator:tester")
	require.Contains(t, comment, srv.URL+"/octo/app/pull/8", "the pull request worked on links the new one")
	pushed := strings.TrimSpace(forgetest.Git(t, bare, "rev-parse", "refs/heads/paddock/"+x.ID))
	msg := forgetest.Git(t, bare, "log", "-1", "--format=%B", pushed)
	require.Contains(t, msg, "Paddock-Session: "+x.ID)
	require.Equal(t, head, strings.TrimSpace(forgetest.Git(t, bare, "rev-parse", pushed+"^")), "the accepted commit sits on the pull request's head")

	mu.Unlock()

	// Bound, held, to the pull request it started from and to the one it
	// delivered; the forge's "closed" delivery of the second releases it.
	bound := func() map[int64]bool {
		t.Helper()
		out := map[int64]bool{}
		evs, err := api.Sessions().Events(ctx, x.ID, 0)
		require.NoError(t, err)
		for _, e := range evs {
			var d session.TextData
			if e.Kind == session.EventNotice && json.Unmarshal(e.Data, &d) == nil {
				for _, n := range []int64{7, 8} {
					if strings.HasPrefix(d.Text, fmt.Sprintf("bound to pull request #%d ", n)) {
						out[n] = true
					}
					if strings.HasPrefix(d.Text, fmt.Sprintf("pull request #%d of octo/app is closed", n)) {
						out[n] = false
					}
				}
			}
		}
		return out
	}
	require.Equal(t, map[int64]bool{7: true, 8: true}, bound())
	other := webhook("gh-closed", "gh-delivery-other", []byte(`{"action":"closed","number":8,"pull_request":{"number":8},"repository":{"full_name":"octo/other"}}`))
	require.Equal(t, "released", other.Routed)
	require.Zero(t, other.Released, "another repository's pull request #8 releases nothing")
	rel := webhook("gh-closed", "gh-delivery-2", []byte(`{"action":"closed","number":8,"pull_request":{"number":8,"merged":true},"repository":{"full_name":"octo/app"}}`))
	require.Equal(t, "released", rel.Routed)
	require.Equal(t, 1, rel.Released)
	require.Equal(t, map[int64]bool{7: true, 8: false}, bound())

	// Review comments and CI results on a bound pull request reach the
	// session bound to it, through a trigger with bound routing; an
	// issue's comment, or a check of a released pull request, none.
	review := webhookOf("gh-review", "pull_request_review_comment", "gh-delivery-3", []byte(`{"action":"created","comment":{"id":1,"body":"please rename f"},"pull_request":{"number":7},"repository":{"full_name":"octo/app"}}`))
	require.Equal(t, spec.RouteBound, review.Routed)
	require.Equal(t, []string{x.ID}, review.Sessions)
	cmds, err := api.Sessions().Commands(ctx, x.ID)
	require.NoError(t, err)
	i := slices.IndexFunc(cmds, func(c session.Command) bool { return c.ID == review.Commands[0] })
	require.GreaterOrEqual(t, i, 0)
	require.Contains(t, string(cmds[i].Payload), "github.pull_request_review_comment.created: please rename f")
	issue := webhookOf("gh-review", "issue_comment", "gh-delivery-4", []byte(`{"action":"created","comment":{"id":2,"body":"an issue"},"issue":{"number":9},"repository":{"full_name":"octo/app"}}`))
	require.Equal(t, spec.RouteBound, issue.Routed)
	require.Empty(t, issue.Sessions, "an issue is no pull request")
	check := webhookOf("gh-review", "check_run", "gh-delivery-5", []byte(`{"action":"completed","check_run":{"conclusion":"failure","pull_requests":[{"number":8,"base":{"repo":{"url":"`+srv.URL+`/api/v3/repos/octo/app"}}}]},"repository":{"full_name":"octo/app"}}`))
	require.Empty(t, check.Sessions, "pull request #8's binding is released")
	check = webhookOf("gh-review", "check_run", "gh-delivery-6", []byte(`{"action":"completed","check_run":{"conclusion":"failure","pull_requests":[{"number":7,"base":{"repo":{"url":"`+srv.URL+`/api/v3/repos/octo/app"}}}]},"repository":{"full_name":"octo/app"}}`))
	require.Equal(t, []string{x.ID}, check.Sessions, "a failed check of pull request #7")
}
