// Package pulls opens pull requests on the forges: the deliverable of a
// session on a remote repository, once a person accepted it and its
// branch was pushed. One adapter per kind of forge, each on the forge's
// maintained client library; a plain git server has none (the branch is
// the deliverable).
package pulls

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"code.gitea.io/sdk/gitea"
	gitlab "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/google/go-github/v84/github"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/mirror"
)

// Request is a pull request to open: Head (a branch pushed to the
// repository) into Base (the repository's default branch when empty).
type Request struct {
	Head, Base  string
	Title, Body string
	// From is the pull request the session started from (0: none): the
	// new one goes into its head branch (when Base is empty), and a
	// comment on it links the new one.
	From int64
	// Comment is that comment's text; the new pull request's address is
	// added to it.
	Comment string
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
	// No redirect is followed: the SDKs would send the token along to
	// wherever a forge (or what answers for it) points.
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Open opens a pull request on src's repository, or finds the one open
// already from the same head.
func (f Forges) Open(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	pr, err := f.open(ctx, src, r)
	return pr, scrubbed(err, src.Credential)
}

func (f Forges) open(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	switch src.Connection.Kind {
	case forge.Gitea:
		return f.gitea(ctx, src, r)
	case forge.GitHub:
		return f.github(ctx, src, r)
	case forge.GitLab:
		return f.gitlab(ctx, src, r)
	case forge.Git:
		return PullRequest{}, ErrNone
	}
	return PullRequest{}, fmt.Errorf("%s: a kind of forge without pull requests here: open one from branch %s on the forge", src.Connection.Kind, r.Head)
}

// Account is the holder of a credential on a forge: their account's
// name (Login), and where the forge has them, the name and address
// their commits carry (Name, Email; empty when it has none to give).
type Account struct {
	Login, Name, Email string
}

// Author is the name and address the account's commits carry: its
// own, or for a GitHub account without a public address, the forge's
// private one for it (ID+login@users.noreply.HOST). ok is false when
// the forge gave no address, or neither a name nor a login a commit
// could carry.
func (a Account) Author() (name, email string, ok bool) {
	if a.Email == "" {
		return "", "", false
	}
	name = a.Name
	if name == "" {
		name = a.Login
	}
	if !personName(name) {
		return "", "", false
	}
	return name, a.Email, true
}

// Account asks the forge whose src's credential is: a person's link
// (forge.Link) is checked with it as it is made, and the commit they
// accept is authored by it. A forge that does not answer (a network
// error, a 5xx) or answers nonsense (not its JSON, a name no account
// has) is ErrUnreachable. A name or an address a commit could not carry
// as it is (control characters, angle brackets, no address's shape) is
// left out.
func (f Forges) Account(ctx context.Context, src mirror.Source) (Account, error) {
	a, status, err := f.account(ctx, src)
	switch {
	case err != nil && (status == 0 || status >= 500 || status/100 == 2):
		return Account{}, scrubbed(fmt.Errorf("%w: %w", ErrUnreachable, err), src.Credential)
	case err != nil:
		return Account{}, scrubbed(err, src.Credential)
	case !accountName(a.Login):
		return Account{}, fmt.Errorf("%w: it named the credential's holder %q, which is no account name", ErrUnreachable, clip.String(a.Login, 80))
	}
	if !personName(a.Name) {
		a.Name = ""
	}
	if !address(a.Email) {
		a.Email = ""
	}
	return a, nil
}

// ErrUnreachable says a forge did not answer, or answered nonsense.
var ErrUnreachable = errors.New("the forge did not answer as one")

// accountName says login is a forge's account name: 1 to 255 letters,
// digits, '.', '_', '-' (and '@' or '+' for a bot or an email-like
// name), nothing a terminal or a trailer would read otherwise.
func accountName(login string) bool {
	if login == "" || len(login) > 255 {
		return false
	}
	for _, r := range login {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@+[]", r)) {
			return false
		}
	}
	return true
}

// personName says s can be a commit's author name as it is: 1 to 255
// bytes of printable text, without the angle brackets that end it, and
// nothing git would strip from its ends (space, control characters and
// . , : ; < > " \ ', which git drops there: a name of nothing else it
// refuses).
func personName(s string) bool {
	if s == "" || len(s) > 255 || strings.Trim(s, gitCrud) != s || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '<' || r == '>' || r == unicode.ReplacementChar || unicode.In(r, unicode.Cf) {
			return false
		}
	}
	return true
}

// gitCrud is what git strips from the ends of a commit's name and address.
const gitCrud = " .,:;<>\"\\'\t\n\r\f\v"

// address says s has an email address's shape a commit can carry: one
// '@' between a local part and a domain with a dot, at most 254 bytes,
// printable ASCII without spaces, quotes, angle brackets or commas.
func address(s string) bool {
	at := strings.IndexByte(s, '@')
	if len(s) > 254 || at < 1 || strings.Count(s, "@") != 1 || !strings.Contains(s[at+1:], ".") || strings.Trim(s, gitCrud) != s ||
		strings.HasPrefix(s[at+1:], ".") || strings.HasSuffix(s, ".") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("<>\"\\,;:()[]", c) >= 0 {
			return false
		}
	}
	return true
}

// account asks the forge whose src's credential is; status is its
// answer's HTTP status (0: none came).
func (f Forges) account(ctx context.Context, src mirror.Source) (a Account, status int, err error) {
	switch src.Connection.Kind {
	case forge.Gitea:
		c, err := f.giteaClient(ctx, src)
		if err != nil {
			return a, 0, err
		}
		u, resp, err := c.GetMyUserInfo()
		if resp != nil && resp.Response != nil {
			status = resp.StatusCode
		}
		if err != nil {
			return a, status, fmt.Errorf("gitea: who the credential is: %w", err)
		}
		return Account{Login: u.UserName, Name: u.FullName, Email: u.Email}, status, nil
	case forge.GitHub:
		c, err := f.githubClient(src)
		if err != nil {
			return a, 0, err
		}
		u, resp, err := c.Users.Get(ctx, "")
		if resp != nil && resp.Response != nil {
			status = resp.StatusCode
		}
		if err != nil {
			return a, status, fmt.Errorf("github: who the credential is: %w", err)
		}
		a = Account{Login: u.GetLogin(), Name: u.GetName(), Email: u.GetEmail()}
		if a.Email == "" && u.GetID() > 0 && accountName(a.Login) {
			// No public address: the one GitHub keeps for the account's
			// commits made on the web, which it links to the account.
			host := "github.com"
			if base, _ := forge.ParseBase(src.Connection.URL); base != nil && base.Host != "github.com" {
				host = base.Hostname()
			}
			a.Email = fmt.Sprintf("%d+%s@users.noreply.%s", u.GetID(), a.Login, host)
		}
		return a, status, nil
	case forge.GitLab:
		c, err := f.gitlabClient(src)
		if err != nil {
			return a, 0, err
		}
		// The library's User leaves out commit_email, which GitLab gives
		// the account itself: the address the person chose for their
		// commits, else their public one, else their primary one.
		req, err := c.NewRequest(http.MethodGet, "user", nil, []gitlab.RequestOptionFunc{gitlab.WithContext(ctx)})
		if err != nil {
			return a, 0, err
		}
		var u struct {
			Username    string `json:"username"`
			Name        string `json:"name"`
			CommitEmail string `json:"commit_email"`
			PublicEmail string `json:"public_email"`
			Email       string `json:"email"`
		}
		resp, err := c.Do(req, &u)
		if resp != nil && resp.Response != nil {
			status = resp.StatusCode
		}
		if err != nil {
			return a, status, fmt.Errorf("gitlab: who the credential is: %w", err)
		}
		return Account{Login: u.Username, Name: u.Name, Email: cmp.Or(u.CommitEmail, u.PublicEmail, u.Email)}, status, nil
	}
	return a, http.StatusBadRequest, ErrNone
}

// scrubbed is err with cred cut from its text (a forge, or what answers
// for it, may echo a request back), clipped; its kind (ErrNone,
// ErrUnreachable) kept.
func scrubbed(err error, cred []byte) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(cred) > 0 {
		for _, form := range []string{string(cred), url.QueryEscape(string(cred)), base64.StdEncoding.EncodeToString(cred)} {
			msg = strings.ReplaceAll(msg, form, "[credential]")
		}
	}
	msg = clip.String(msg, 600)
	for _, kind := range []error{ErrNone, ErrUnreachable} {
		if errors.Is(err, kind) {
			return &kindError{kind: kind, msg: msg}
		}
	}
	return errors.New(msg)
}

// kindError is a scrubbed error that keeps its kind.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func (f Forges) gitlabClient(src mirror.Source) (*gitlab.Client, error) {
	c, err := gitlab.NewClient(string(src.Credential), gitlab.WithBaseURL(src.Connection.URL+"/api/v4"), gitlab.WithHTTPClient(f.client()))
	if err != nil {
		return nil, fmt.Errorf("gitlab at %s: %w", src.Connection.URL, err)
	}
	return c, nil
}

func (f Forges) giteaClient(ctx context.Context, src mirror.Source) (*gitea.Client, error) {
	c, err := gitea.NewClient(src.Connection.URL, gitea.SetToken(string(src.Credential)), gitea.SetHTTPClient(f.client()), gitea.SetContext(ctx),
		gitea.SetGiteaVersion("")) // Forgejo and builds of Gitea name versions the SDK does not parse
	if err != nil {
		return nil, fmt.Errorf("gitea at %s: %w", src.Connection.URL, err)
	}
	return c, nil
}

// githubClient speaks to api.github.com for github.com, URL/api/v3 for
// GitHub Enterprise Server.
func (f Forges) githubClient(src mirror.Source) (*github.Client, error) {
	c := github.NewClient(f.client()).WithAuthToken(string(src.Credential))
	if base, _ := forge.ParseBase(src.Connection.URL); base != nil && base.Host != "github.com" {
		var err error
		if c, err = c.WithEnterpriseURLs(src.Connection.URL+"/api/v3/", src.Connection.URL+"/api/uploads/"); err != nil {
			return nil, fmt.Errorf("github at %s: %w", src.Connection.URL, err)
		}
	}
	return c, nil
}

// gitlab opens a merge request through GitLab's API (URL/api/v4).
func (f Forges) gitlab(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	c, err := f.gitlabClient(src)
	if err != nil {
		return PullRequest{}, err
	}
	pid := src.Repository.Path
	in := gitlab.WithContext(ctx)
	if r.Base == "" && r.From != 0 {
		from, _, err := c.MergeRequests.GetMergeRequest(pid, r.From, nil, in)
		if err != nil {
			return PullRequest{}, fmt.Errorf("gitlab: merge request !%d: %w", r.From, err)
		}
		if from.SourceProjectID == from.TargetProjectID {
			r.Base = from.SourceBranch
		}
	}
	if r.Base == "" {
		p, _, err := c.Projects.GetProject(pid, nil, in)
		if err != nil {
			return PullRequest{}, fmt.Errorf("gitlab: project %s: %w", pid, err)
		}
		r.Base = p.DefaultBranch
	}
	open, _, err := c.MergeRequests.ListProjectMergeRequests(pid, &gitlab.ListProjectMergeRequestsOptions{State: gitlab.Ptr("opened"),
		SourceBranch: gitlab.Ptr(r.Head), TargetBranch: gitlab.Ptr(r.Base)}, in)
	if err != nil {
		return PullRequest{}, fmt.Errorf("gitlab: merge requests from %s: %w", r.Head, err)
	}
	if len(open) > 0 {
		return PullRequest{Number: open[0].IID, URL: open[0].WebURL, Base: r.Base, Existing: true}, nil
	}
	mr, _, err := c.MergeRequests.CreateMergeRequest(pid, &gitlab.CreateMergeRequestOptions{Title: &r.Title, Description: &r.Body,
		SourceBranch: &r.Head, TargetBranch: &r.Base}, in)
	if err != nil {
		return PullRequest{}, fmt.Errorf("gitlab: open a merge request from %s into %s: %w", r.Head, r.Base, err)
	}
	out := PullRequest{Number: mr.IID, URL: mr.WebURL, Base: r.Base}
	if r.From != 0 {
		body := r.Comment + " " + mr.WebURL
		if _, _, err := c.Notes.CreateMergeRequestNote(pid, r.From, &gitlab.CreateMergeRequestNoteOptions{Body: &body}, in); err != nil {
			return out, fmt.Errorf("gitlab: comment on merge request !%d: %w", r.From, err)
		}
	}
	return out, nil
}

// ownerName splits a repository's path into its owner and name.
func ownerName(path string) (string, string) {
	i := strings.LastIndexByte(path, '/')
	return path[:i], path[i+1:]
}

// gitea opens it through Gitea's (and Forgejo's) API.
func (f Forges) gitea(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	c, err := f.giteaClient(ctx, src)
	if err != nil {
		return PullRequest{}, err
	}
	owner, name := ownerName(src.Repository.Path)
	if r.Base == "" && r.From != 0 {
		from, _, err := c.GetPullRequest(owner, name, r.From)
		if err != nil {
			return PullRequest{}, fmt.Errorf("gitea: pull request #%d: %w", r.From, err)
		}
		if from.Head != nil && from.Head.Repository != nil && from.Head.Repository.FullName == src.Repository.Path {
			r.Base = from.Head.Ref
		}
	}
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
	out := PullRequest{Number: pr.Index, URL: pr.HTMLURL, Base: r.Base}
	if r.From != 0 {
		if _, _, err := c.CreateIssueComment(owner, name, r.From, gitea.CreateIssueCommentOption{Body: r.Comment + " " + pr.HTMLURL}); err != nil {
			return out, fmt.Errorf("gitea: comment on pull request #%d: %w", r.From, err)
		}
	}
	return out, nil
}

// github opens it through GitHub's API.
func (f Forges) github(ctx context.Context, src mirror.Source, r Request) (PullRequest, error) {
	c, err := f.githubClient(src)
	if err != nil {
		return PullRequest{}, err
	}
	owner, name := ownerName(src.Repository.Path)
	if r.Base == "" && r.From != 0 {
		from, _, err := c.PullRequests.Get(ctx, owner, name, int(r.From))
		if err != nil {
			return PullRequest{}, fmt.Errorf("github: pull request #%d: %w", r.From, err)
		}
		if from.GetHead().GetRepo().GetFullName() == src.Repository.Path {
			r.Base = from.GetHead().GetRef()
		}
	}
	if r.Base == "" {
		repo, _, err := c.Repositories.Get(ctx, owner, name)
		if err != nil {
			return PullRequest{}, fmt.Errorf("github: repository %s: %w", src.Repository.Path, err)
		}
		r.Base = repo.GetDefaultBranch()
	}
	open, _, err := c.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{State: "open", Head: owner + ":" + r.Head, Base: r.Base})
	if err != nil {
		return PullRequest{}, fmt.Errorf("github: pull requests from %s: %w", r.Head, err)
	}
	if len(open) > 0 {
		return PullRequest{Number: int64(open[0].GetNumber()), URL: open[0].GetHTMLURL(), Base: r.Base, Existing: true}, nil
	}
	pr, _, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: &r.Title, Head: &r.Head, Base: &r.Base, Body: &r.Body})
	if err != nil {
		return PullRequest{}, fmt.Errorf("github: open a pull request from %s into %s: %w", r.Head, r.Base, err)
	}
	out := PullRequest{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), Base: r.Base}
	if r.From != 0 {
		body := r.Comment + " " + pr.GetHTMLURL()
		if _, _, err := c.Issues.CreateComment(ctx, owner, name, int(r.From), &github.IssueComment{Body: &body}); err != nil {
			return out, fmt.Errorf("github: comment on pull request #%d: %w", r.From, err)
		}
	}
	return out, nil
}
