package forge

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
)

// Repository is a remote repository a session works on, as a connection
// grants it.
type Repository struct {
	// Connection is the name of the connection that grants it.
	Connection string `json:"connection"`
	// URL is its address, canonical: the connection's URL, then Path.
	URL string `json:"url"`
	// Path is OWNER/NAME (GitLab's groups may nest: GROUP/SUB/NAME).
	Path string `json:"path"`
}

// CloneURL is the address git fetches from.
func (r Repository) CloneURL() string { return r.URL + ".git" }

// ErrNotGranted says no live connection of the project grants the
// repository.
var ErrNotGranted = errors.New("no connection grants it")

// shortForm is OWNER/NAME (or GROUP/SUB/NAME), as a repository is named
// on its project's connections.
var shortForm = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]*(/[A-Za-z0-9_.][A-Za-z0-9_.-]*)+$`)
})

// IsRemote says repo names a remote repository (an address with a
// scheme, or OWNER/NAME) rather than a path on the server.
func IsRemote(repo string) bool {
	return strings.Contains(repo, "://") || (!strings.HasPrefix(repo, ".") && shortForm().MatchString(repo))
}

// Resolve finds the live connection of conns that grants repo (an
// address, https://FORGE/OWNER/NAME[.git], or OWNER/NAME on the
// project's connections) and the repository it names. A repository no
// live connection grants is ErrNotGranted, the message naming what would.
func Resolve(repo string, conns []Connection) (Connection, Repository, error) {
	if !strings.Contains(repo, "://") {
		return resolveShort(repo, conns)
	}
	u, err := url.Parse(repo)
	if err != nil {
		return Connection{}, Repository{}, fmt.Errorf("repository %q: not an address", clip(repo))
	}
	if u.User != nil {
		return Connection{}, Repository{}, fmt.Errorf("repository %q: holds a user or password; credentials belong to the project's connection (paddock connections add), never in the address", redactUser(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Connection{}, Repository{}, fmt.Errorf("repository %q: no query or fragment", clip(repo))
	}
	want := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git")
	var revoked string
	for _, c := range conns {
		base, err := ParseBase(c.URL)
		if err != nil || base.Scheme != u.Scheme || base.Host != strings.ToLower(u.Host) {
			continue
		}
		rest, ok := strings.CutPrefix(want, base.Path+"/")
		if !ok || !validPath(rest) {
			continue
		}
		if !c.Live() {
			revoked = c.Name
			continue
		}
		if c.Grants(rest) {
			return c, Repository{Connection: c.Name, URL: base.String() + "/" + rest, Path: rest}, nil
		}
	}
	if revoked != "" {
		return Connection{}, Repository{}, fmt.Errorf("repository %s: connection %s that granted it is revoked: %w", clip(repo), revoked, ErrNotGranted)
	}
	return Connection{}, Repository{}, fmt.Errorf("repository %s: %w; an admin of the project grants it with `paddock connections add` (or adds it to a connection's repositories)", clip(repo), ErrNotGranted)
}

// resolveShort is Resolve for OWNER/NAME: the one live connection that
// grants it.
func resolveShort(repo string, conns []Connection) (Connection, Repository, error) {
	if !validPath(repo) {
		return Connection{}, Repository{}, fmt.Errorf("repository %q: want an absolute path on the server, an address (https://FORGE/OWNER/NAME) or OWNER/NAME", clip(repo))
	}
	var found []Connection
	for _, c := range conns {
		if c.Grants(repo) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return Connection{}, Repository{}, fmt.Errorf("repository %s: %w; an admin of the project grants it with `paddock connections add`", repo, ErrNotGranted)
	case 1:
		base, err := ParseBase(found[0].URL)
		if err != nil {
			return Connection{}, Repository{}, err
		}
		return found[0], Repository{Connection: found[0].Name, URL: base.String() + "/" + repo, Path: repo}, nil
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = c.Name + " (" + c.URL + ")"
	}
	return Connection{}, Repository{}, fmt.Errorf("repository %s: granted by %d connections, %s: name it by its address", repo, len(found), strings.Join(names, ", "))
}

// validPath says p is a repository path: two or more name segments.
func validPath(p string) bool {
	if !shortForm().MatchString(p) || len(p) > 300 {
		return false
	}
	for _, s := range strings.Split(p, "/") {
		if s == "." || s == ".." || path.Ext(s) == ".lock" || path.Ext(s) == ".git" {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// PullURL is the address of pull (merge) request n of the repository at
// repoURL on a forge of kind k.
func PullURL(k Kind, repoURL string, n int64) string {
	switch k {
	case GitHub:
		return fmt.Sprintf("%s/pull/%d", repoURL, n)
	case GitLab:
		return fmt.Sprintf("%s/-/merge_requests/%d", repoURL, n)
	}
	return fmt.Sprintf("%s/pulls/%d", repoURL, n)
}
