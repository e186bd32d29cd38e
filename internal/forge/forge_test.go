package forge

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := Connection{Name: "gitea", Kind: Gitea, URL: "https://git.example.com/prefix", Repositories: []string{"team/app", "ops/*"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	longest := ok
	longest.Name, longest.Username = "a"+strings.Repeat("-", 61)+"z", strings.Repeat("u", 100)
	longest.URL = "https://git.example.com/" + strings.Repeat("s", 100)
	if err := longest.Validate(); err != nil {
		t.Fatalf("the longest names allowed: %v", err)
	}
	for name, tc := range map[string]struct {
		edit func(*Connection)
		want string
	}{
		"bad name":           {func(c *Connection) { c.Name = "Git Hub" }, "name"},
		"unknown kind":       {func(c *Connection) { c.Kind = "svn" }, "want one of github, gitlab, gitea, git"},
		"credential in url":  {func(c *Connection) { c.URL = "https://tok:x@git.example.com" }, "give the credential apart"},
		"ssh":                {func(c *Connection) { c.URL = "ssh://git@git.example.com" }, "ssh is not supported"},
		"file":               {func(c *Connection) { c.URL = "file:///srv/git" }, "want https://HOST"},
		"query":              {func(c *Connection) { c.URL = "https://h/?x=1" }, "no query"},
		"no repositories":    {func(c *Connection) { c.Repositories = nil }, "name at least one"},
		"absolute pattern":   {func(c *Connection) { c.Repositories = []string{"/etc/*"} }, "repository pattern"},
		"dot-dot pattern":    {func(c *Connection) { c.Repositories = []string{"team/.."} }, "no . or .."},
		"bad glob":           {func(c *Connection) { c.Repositories = []string{"team/[a"} }, "repository pattern"},
		"bad username":       {func(c *Connection) { c.Username = "a b" }, "username"},
		"long name":          {func(c *Connection) { c.Name = strings.Repeat("a", 64) }, "want 1 to 63"},
		"dash-ended name":    {func(c *Connection) { c.Name = "gitea-" }, "not starting or ending with a dash"},
		"long username":      {func(c *Connection) { c.Username = strings.Repeat("u", 101) }, "username"},
		"long segment":       {func(c *Connection) { c.URL = "https://h/" + strings.Repeat("s", 101) }, "path segment"},
		"dash segment":       {func(c *Connection) { c.URL = "https://h/-x" }, "path segment"},
		"bad prefix segment": {func(c *Connection) { c.URL = "https://h/a%20b" }, "path segment"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "tok:x") {
				t.Fatalf("the message repeats the credential: %v", err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	now := time.Now()
	conns := []Connection{
		{Name: "gitea", Kind: Gitea, URL: "https://git.example.com", Repositories: []string{"team/*"}},
		{Name: "lab", Kind: GitLab, URL: "https://lab.example.com/gitlab", Repositories: []string{"group/sub/*"}},
		{Name: "old", Kind: Git, URL: "http://old.example.com", Repositories: []string{"*"}, RevokedAt: &now},
		{Name: "mirror", Kind: Git, URL: "https://mirror.example.com", Repositories: []string{"team/app"}},
	}
	for _, tc := range []struct {
		repo, conn, url, err string
	}{
		{repo: "https://git.example.com/team/app", conn: "gitea", url: "https://git.example.com/team/app"},
		{repo: "https://GIT.example.com/team/app.git/", conn: "gitea", url: "https://git.example.com/team/app"},
		{repo: "https://lab.example.com/gitlab/group/sub/svc", conn: "lab", url: "https://lab.example.com/gitlab/group/sub/svc"},
		{repo: "https://lab.example.com/group/sub/svc", err: "no connection grants it"},
		{repo: "https://git.example.com/other/app", err: "no connection grants it"},
		{repo: "https://git.example.com/team/../other/app", err: "no connection grants it"},
		{repo: "http://git.example.com/team/app", err: "no connection grants it"}, // the scheme is the connection's
		{repo: "http://old.example.com/team/app", err: "is revoked"},
		{repo: "https://u:secret@git.example.com/team/app", err: "holds a user or password"},
		{repo: "https://git.example.com/team/app?ref=x", err: "no query"},
		{repo: "team/app", err: "granted by 2 connections"},
		{repo: "group/sub/svc", conn: "lab", url: "https://lab.example.com/gitlab/group/sub/svc"},
		{repo: "nobody/app", err: "no connection grants it"},
		{repo: "team/app.lock", err: "want an absolute path"},
		{repo: "team/sub.git/app", err: "want an absolute path"}, // a mirror inside another's
	} {
		t.Run(tc.repo, func(t *testing.T) {
			c, r, err := Resolve(tc.repo, conns)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v (%v), want %q", err, r, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the message repeats the password: %v", err)
				}
				return
			}
			if err != nil || c.Name != tc.conn || r.URL != tc.url || r.Connection != tc.conn {
				t.Fatalf("got %v %+v %v, want %s %s", c.Name, r, err, tc.conn, tc.url)
			}
			if !strings.HasSuffix(r.CloneURL(), ".git") {
				t.Fatal(r.CloneURL())
			}
		})
	}
	_, _, err := Resolve("nobody/app", conns)
	if !errors.Is(err, ErrNotGranted) {
		t.Fatal(err)
	}
}

func TestIsRemote(t *testing.T) {
	for repo, want := range map[string]bool{
		"/srv/repo": false, "": false, "./team/app": false, "team/app": true, "https://h/team/app": true, "repo": false, "ext::sh": false,
	} {
		if IsRemote(repo) != want {
			t.Errorf("IsRemote(%q) = %v", repo, !want)
		}
	}
}
