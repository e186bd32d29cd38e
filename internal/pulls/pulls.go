// Package pulls opens pull requests on the forges: the deliverable of a
// session on a remote repository, once a person accepted it and its
// branch was pushed. One adapter per kind of forge, each on the forge's
// maintained client library; a plain git server has none (the branch is
// the deliverable).
package pulls

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/mirror"
)

// Request is a pull request to open: Head (a branch pushed to the
// repository) into Base (the repository's default branch when empty).
type Request struct {
	Head, Base  string
	Title, Body string
}

// PullRequest is one opened (or found open already, Existing).
type PullRequest struct {
	Number   int64  `json:"number"`
	URL      string `json:"url"`
	Base     string `json:"base"`
	Existing bool   `json:"existing,omitempty"`
}

// ErrNone says the connection's kind of forge has no pull requests (a
// plain git server): the pushed branch is the deliverable.
var ErrNone = errors.New("this kind of forge has no pull requests")

// Forges open pull requests through each connection's forge.
type Forges struct {
	// HTTP is the client the libraries use (http.DefaultClient's
	// transport with a timeout when nil).
	HTTP *http.Client
}

func (f Forges) client() *http.Client {
	if f.HTTP != nil {
		return f.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Open opens a pull request on src's repository, or finds the one open
// already from the same head.
func (f Forges) Open(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	switch src.Connection.Kind {
	case forge.Gitea:
		return f.gitea(ctx, src, r)
	case forge.Git:
		return PullRequest{}, ErrNone
	}
	return PullRequest{}, fmt.Errorf("pull requests on %s are not built yet: the branch %s was pushed; open the pull request on the forge", src.Connection.Kind, r.Head)
}

// ownerName splits a repository's path into its owner and name.
func ownerName(path string) (string, string) {
	i := strings.LastIndexByte(path, '/')
	return path[:i], path[i+1:]
}

// gitea opens it through Gitea's (and Forgejo's) API.
func (f Forges) gitea(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	c, err := gitea.NewClient(src.Connection.URL, gitea.SetToken(string(src.Credential)), gitea.SetHTTPClient(f.client()), gitea.SetContext(ctx),
		gitea.SetGiteaVersion("")) // Forgejo and builds of Gitea name versions the SDK does not parse
	if err != nil {
		return PullRequest{}, fmt.Errorf("gitea at %s: %w", src.Connection.URL, err)
	}
	owner, name := ownerName(src.Repository.Path)
	if r.Base == "" {
		repo, _, err := c.GetRepo(owner, name)
		if err != nil {
			return PullRequest{}, fmt.Errorf("gitea: repository %s: %w", src.Repository.Path, err)
		}
		r.Base = repo.DefaultBranch
	}
	if pr, _, err := c.GetPullRequestByBaseHead(owner, name, r.Base, r.Head); err == nil && pr != nil && pr.State == gitea.StateOpen {
		return PullRequest{Number: pr.Index, URL: pr.HTMLURL, Base: r.Base, Existing: true}, nil
	}
	pr, _, err := c.CreatePullRequest(owner, name, gitea.CreatePullRequestOption{Head: r.Head, Base: r.Base, Title: r.Title, Body: r.Body})
	if err != nil {
		return PullRequest{}, fmt.Errorf("gitea: open a pull request from %s into %s: %w", r.Head, r.Base, err)
	}
	return PullRequest{Number: pr.Index, URL: pr.HTMLURL, Base: r.Base}, nil
}
