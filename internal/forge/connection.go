// Package forge is where teams keep their code: a project's connections
// to the forges that hold its repositories (the forge's address, the
// repositories it grants, a credential kept sealed elsewhere), and the
// addresses of remote repositories, checked against them.
//
// Everything here is pure: parsing, validation and the grant check. The
// credential itself never passes through this package.
package forge

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Kind is the kind of forge a connection speaks to.
type Kind string

// The kinds of forge. Git is a plain git server over HTTP(S): fetch only,
// no pull requests.
const (
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
	Gitea  Kind = "gitea" // Forgejo too
	Git    Kind = "git"
)

// Kinds lists the kinds, for messages.
var Kinds = []Kind{GitHub, GitLab, Gitea, Git}

// Connection is a project's grant of a forge's repositories: its
// sessions may work on those repositories, fetched by Paddock with the
// connection's credential (never given to the agent).
type Connection struct {
	Project string `json:"project"`
	Name    string `json:"name"`
	Kind    Kind   `json:"kind"`
	// URL is the forge's address: https://HOST[:PORT][/PREFIX]. Its
	// repositories are URL/OWNER/NAME.
	URL string `json:"url"`
	// Repositories are the repositories granted: OWNER/NAME, OWNER/* or *
	// (path.Match patterns over the repository's path).
	Repositories []string `json:"repositories"`
	// Username goes with the credential in HTTP basic authentication
	// (DefaultUsername of the kind when empty).
	Username  string     `json:"username,omitempty"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	RevokedBy string     `json:"revokedBy,omitempty"`
}

// Live says the connection is not revoked.
func (c Connection) Live() bool { return c.RevokedAt == nil }

// User is the name the credential is presented with.
func (c Connection) User() string {
	if c.Username != "" {
		return c.Username
	}
	switch c.Kind {
	case GitHub:
		return "x-access-token"
	case GitLab:
		return "oauth2"
	}
	return "paddock"
}

// Names' shapes; their lengths are checked apart (a bounded repetition
// compiles into as many states, which every program linking this
// package, the client included, would pay for at its start).
var (
	connectionName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`) })
	segment        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]*$`) })
	userName       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.@+-]+$`) })
)

// MaxRepositories bounds a connection's grant list.
const MaxRepositories = 200

// Validate checks a connection as an admin gives it, saying what is wrong.
func (c Connection) Validate() error {
	var errs []error
	if len(c.Name) > 63 || !connectionName().MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 63 lower-case letters, digits and dashes, not starting or ending with a dash", c.Name))
	}
	switch c.Kind {
	case GitHub, GitLab, Gitea, Git:
	default:
		errs = append(errs, fmt.Errorf("kind %q: want one of %s", c.Kind, kindList()))
	}
	if _, err := ParseBase(c.URL); err != nil {
		errs = append(errs, err)
	}
	if len(c.Repositories) == 0 {
		errs = append(errs, errors.New("repositories: name at least one the connection grants (OWNER/NAME, OWNER/* or *)"))
	}
	if len(c.Repositories) > MaxRepositories {
		errs = append(errs, fmt.Errorf("repositories: %d, at most %d", len(c.Repositories), MaxRepositories))
	}
	for _, r := range c.Repositories {
		if err := checkPattern(r); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Username != "" && (len(c.Username) > 100 || !userName().MatchString(c.Username)) {
		errs = append(errs, fmt.Errorf("username %q: want 1 to 100 letters, digits and _.@+-", c.Username))
	}
	return errors.Join(errs...)
}

func kindList() string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// checkPattern checks a grant pattern: path segments of names or globs.
func checkPattern(p string) error {
	if p == "*" {
		return nil
	}
	if _, err := path.Match(p, ""); err != nil || p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
		strings.ContainsAny(p, " \t\n\\") || len(p) > 300 {
		return fmt.Errorf("repository pattern %q: want OWNER/NAME, OWNER/* or *", p)
	}
	for _, s := range strings.Split(p, "/") {
		if s == "." || s == ".." {
			return fmt.Errorf("repository pattern %q: no . or .. segments", p)
		}
	}
	return nil
}

// Grants says the connection grants the repository at path (OWNER/NAME).
// A revoked connection grants nothing.
func (c Connection) Grants(repoPath string) bool {
	if !c.Live() {
		return false
	}
	for _, p := range c.Repositories {
		if p == "*" {
			return true
		}
		if ok, _ := path.Match(p, repoPath); ok {
			return true
		}
	}
	return false
}

// ParseBase checks and normalizes a forge's address: http or https, a
// host, an optional path prefix, nothing else (no user or password: the
// credential is given apart and kept sealed; no query, no fragment).
func ParseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("url %q: want https://HOST[:PORT][/PREFIX]", raw)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("url %q: want an https (or http) address; ssh is not supported", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("url %q: holds a user or password; give the credential apart (it is kept sealed), not in the address", redactUser(u))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("url %q: no query or fragment", raw)
	}
	if u.Port() != "" {
		if _, err := url.Parse("x://h:" + u.Port()); err != nil {
			return nil, fmt.Errorf("url %q: bad port", raw)
		}
	}
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(path.Clean("/"+u.Path), "/")
	u.RawPath = ""
	for _, s := range strings.Split(strings.Trim(u.Path, "/"), "/") {
		if s != "" && (len(s) > 100 || !segment().MatchString(s)) {
			return nil, fmt.Errorf("url %q: path segment %q: want letters, digits and _.-", raw, s)
		}
	}
	return u, nil
}

func redactUser(u *url.URL) string {
	c := *u
	c.User = url.User("REDACTED")
	return c.String()
}

// Link is a person's own account on a connection's forge: the pull
// requests of what they accept on it are opened with their credential
// (kept sealed elsewhere), so the forge shows them as the author. Without
// one, the connection's credential opens them.
type Link struct {
	Project    string `json:"project"`
	Connection string `json:"connection"`
	User       string `json:"user"`
	// URL is the connection's forge the link was made for: a name given
	// again to a connection elsewhere never gets the person's credential.
	URL string `json:"url"`
	// Login is the forge's name for the person's account, as the forge
	// answered when the link was made.
	Login     string    `json:"login"`
	CreatedAt time.Time `json:"createdAt"`
}
