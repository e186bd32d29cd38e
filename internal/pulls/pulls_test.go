package pulls

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/mirror"
)

// TestGitLabMergeRequest: against GitLab's API as its documentation
// records it, a session that started from merge request !5 delivers a
// merge request into !5's source branch and notes it on !5; asked again
// with the same branch, the open one is found.
func TestGitLabMergeRequest(t *testing.T) {
	const token = "glpat-recorded0123456789"
	var created map[string]any
	var note string
	open := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("PRIVATE-TOKEN") != token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"401 Unauthorized"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		base := "/api/v4/projects/group%2Fsub%2Fapp/merge_requests"
		switch p := r.URL.EscapedPath(); {
		case r.Method == http.MethodGet && p == base+"/5":
			_, _ = w.Write([]byte(`{"id":105,"iid":5,"project_id":9,"source_project_id":9,"target_project_id":9,"source_branch":"topic","target_branch":"main","state":"opened","web_url":"https://lab.example.com/group/sub/app/-/merge_requests/5"}`))
		case r.Method == http.MethodGet && p == base:
			require.Equal(t, "opened", r.URL.Query().Get("state"))
			require.Equal(t, "paddock/s1", r.URL.Query().Get("source_branch"))
			if open {
				_, _ = w.Write([]byte(`[{"id":106,"iid":6,"source_branch":"paddock/s1","target_branch":"topic","state":"opened","web_url":"https://lab.example.com/group/sub/app/-/merge_requests/6"}]`))
				return
			}
			_, _ = w.Write([]byte(`[]`))
		case r.Method == http.MethodPost && p == base:
			require.NoError(t, json.NewDecoder(r.Body).Decode(&created))
			open = true
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":106,"iid":6,"source_branch":"paddock/s1","target_branch":"topic","state":"opened","web_url":"https://lab.example.com/group/sub/app/-/merge_requests/6"}`))
		case r.Method == http.MethodPost && p == base+"/5/notes":
			var n struct {
				Body string `json:"body"`
			}
			require.NoError(t, json.NewDecoder(r.Body).Decode(&n))
			note = n.Body
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"id":1,"body":%q}`, n.Body)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"404 Not Found"}`))
		}
	}))
	defer srv.Close()
	src := mirror.Source{Project: "p", Connection: forge.Connection{Name: "lab", Kind: forge.GitLab, URL: srv.URL},
		Repository: forge.Repository{Connection: "lab", URL: srv.URL + "/group/sub/app", Path: "group/sub/app"}, Credential: []byte(token)}
	req := Request{Head: "paddock/s1", Title: "Fix it", Body: "Paddock-Session: s1", From: 5, Comment: "Paddock's changes are in"}
	pr, err := Forges{}.Open(context.Background(), src, req)
	require.NoError(t, err)
	require.Equal(t, PullRequest{Number: 6, URL: "https://lab.example.com/group/sub/app/-/merge_requests/6", Base: "topic"}, pr)
	require.Equal(t, "topic", created["target_branch"], "into the merge request's own branch")
	require.Equal(t, "paddock/s1", created["source_branch"])
	require.Equal(t, "Paddock's changes are in https://lab.example.com/group/sub/app/-/merge_requests/6", note)

	again, err := Forges{}.Open(context.Background(), src, req)
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, int64(6), again.Number)

	src.Credential = []byte("wrong")
	_, err = Forges{}.Open(context.Background(), src, req)
	require.ErrorContains(t, err, "401")

	_, err = Forges{}.Open(context.Background(), mirror.Source{Connection: forge.Connection{Kind: forge.Git}}, req)
	require.ErrorIs(t, err, ErrNone)
}

// TestAccount: GitHub (Enterprise Server's /api/v3) and GitLab name the
// holder of a credential, and the name and address their commits carry,
// as their documentation records it (GitHub's private address for an
// account without a public one; GitLab's commit_email first); a
// credential they refuse is an error, and a plain git server has no
// accounts.
func TestAccount(t *testing.T) {
	const token = "recorded-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization") == "Bearer "+token || r.Header.Get("PRIVATE-TOKEN") == token
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !auth:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"Bad credentials"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v3/user":
			_, _ = w.Write([]byte(`{"login":"octocat","id":583231,"type":"User","name":"The Octocat","email":null}`))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v4/user":
			_, _ = w.Write([]byte(`{"id":1,"username":"john_smith","name":"John Smith","state":"active","email":"john@example.com","public_email":"","commit_email":"john.commits@example.com"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	host = host[:strings.IndexByte(host, ':')]
	for kind, want := range map[forge.Kind]Account{
		forge.GitHub: {Login: "octocat", Name: "The Octocat", Email: "583231+octocat@users.noreply." + host},
		forge.GitLab: {Login: "john_smith", Name: "John Smith", Email: "john.commits@example.com"},
	} {
		src := mirror.Source{Project: "p", Connection: forge.Connection{Name: "f", Kind: kind, URL: srv.URL}, Credential: []byte(token)}
		got, err := Forges{}.Account(context.Background(), src)
		require.NoError(t, err, kind)
		require.Equal(t, want, got)
		src.Credential = []byte("wrong")
		_, err = Forges{}.Account(context.Background(), src)
		require.ErrorContains(t, err, "401", kind)
	}
	_, err := Forges{}.Account(context.Background(), mirror.Source{Connection: forge.Connection{Kind: forge.Git}})
	require.ErrorIs(t, err, ErrNone)
}

// TestAuthorOfAnAccount: what a forge names an account is a commit's
// author only where a commit can carry it as it is; a name that cannot
// gives way to the login, an address that cannot to none (and no
// author).
func TestAuthorOfAnAccount(t *testing.T) {
	for _, c := range []struct {
		user      string
		name, got string
		ok        bool
	}{
		{`{"login":"ana","full_name":"Ana Lima","email":"ana@example.com"}`, "Ana Lima", "ana@example.com", true},
		{`{"login":"ana","full_name":"","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"ana","full_name":"Ana\nAuthor: Eve <eve@evil>","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"ana","full_name":"Ana <x>","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"ana","full_name":" Ana","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"ana","full_name":"Ana\u202e","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"ana","full_name":"Ana","email":"ana@example.com>\nx"}`, "", "", false},
		{`{"login":"ana","full_name":"Ana","email":"ana <ana@example.com>"}`, "", "", false},
		{`{"login":"ana","full_name":"Ana","email":"ana"}`, "", "", false},
		{`{"login":"ana","full_name":"Ana","email":"a@b@example.com"}`, "", "", false},
		{`{"login":"ana","full_name":"Ana","email":""}`, "", "", false},
		// What git would strip from the ends: a name of nothing else it
		// refuses, and one with some it would change.
		{`{"login":"ana","full_name":".","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"ana","full_name":"Ann ,","email":"ana@example.com"}`, "ana", "ana@example.com", true},
		{`{"login":"..","full_name":"","email":"dots@example.com"}`, "", "", false},
		{`{"login":"ana","full_name":"Ana","email":".ana@example.com"}`, "", "", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/api/v1/user" {
				_, _ = w.Write([]byte(c.user))
				return
			}
			w.WriteHeader(http.StatusNotFound)
		}))
		src := mirror.Source{Project: "p", Connection: forge.Connection{Name: "f", Kind: forge.Gitea, URL: srv.URL}, Credential: []byte("t")}
		a, err := Forges{}.Account(context.Background(), src)
		srv.Close()
		require.NoError(t, err, c.user)
		name, email, ok := a.Author()
		require.Equal(t, c.ok, ok, c.user)
		require.Equal(t, c.name, name, c.user)
		require.Equal(t, c.got, email, c.user)
	}
}

// TestForgesAnswersAreCheckedAndScrubbed: a forge that echoes the
// credential back in its error has it cut from the error; one that does
// not answer, or answers a name no account has, is ErrUnreachable, not a
// refused credential.
func TestForgesAnswersAreCheckedAndScrubbed(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef01234567"
	login := "tessa"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/user" {
			_ = json.NewEncoder(w).Encode(map[string]any{"id": 1, "login": login, "username": login})
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"message":"request with token %s refused"}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	src := mirror.Source{Project: "p", Connection: forge.Connection{Name: "g", Kind: forge.Gitea, URL: srv.URL},
		Repository: forge.Repository{Connection: "g", URL: srv.URL + "/team/app", Path: "team/app"}, Credential: []byte(token)}
	_, err := Forges{}.Open(context.Background(), src, Request{Head: "paddock/s", Base: "main", Title: "t"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), token)
	require.Contains(t, err.Error(), "[credential]")

	got, err := Forges{}.Account(context.Background(), src)
	require.NoError(t, err)
	require.Equal(t, "tessa", got.Login)
	for _, bad := range []string{"tessa\n\nAccepted-By: operator:root", "", strings.Repeat("a", 256), "\x1b[2Jx", "tes sa"} {
		login = bad
		_, err = Forges{}.Account(context.Background(), src)
		require.ErrorIs(t, err, ErrUnreachable, "%q", bad)
	}
	srv.Close()
	_, err = Forges{}.Account(context.Background(), src)
	require.ErrorIs(t, err, ErrUnreachable, "a forge that does not answer")
	require.NotContains(t, err.Error(), token)
}
