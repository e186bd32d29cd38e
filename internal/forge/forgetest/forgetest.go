// Package forgetest serves git repositories over git's own smart HTTP
// (git http-backend behind net/http/cgi) on loopback, behind HTTP basic
// authentication, for tests of fetching from a forge.
package forgetest

import (
	"crypto/subtle"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is a git server: repositories under Root as OWNER/NAME.git.
type Server struct {
	*httptest.Server
	Root string
	// User and Token are the credential it takes.
	User, Token string
	// Requests counts the requests it answered with a repository's data.
	Requests atomic.Int64
	// API, when set, answers every request under /api/ (a forge's API
	// beside its git), checking the credential itself.
	API http.Handler

	mu   sync.Mutex
	down bool
}

// New serves an empty root on loopback; the test closes it.
func New(t testing.TB, user, token string) *Server {
	t.Helper()
	exe, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(exe)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git http-backend: %v", err)
	}
	s := &Server{Root: t.TempDir(), User: user, Token: token}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + s.Root}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "the forge is down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if s.API != nil && strings.HasPrefix(r.URL.Path, "/api/") {
			s.API.ServeHTTP(w, r)
			return
		}
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.User)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(s.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		s.Requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// SetDown makes it answer 503 to everything (down) or serve again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// Repo makes the bare repository OWNER/NAME with a main branch of the
// given files (committed once) and returns its path.
func (s *Server) Repo(t testing.TB, path string, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(s.Root, filepath.FromSlash(path)+".git")
	work := t.TempDir()
	Git(t, "", "init", "-q", "-b", "main", work)
	for name, content := range files {
		full := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, work, "add", "-A")
	Git(t, work, "commit", "-qm", "first")
	Git(t, "", "clone", "-q", "--bare", work, bare)
	Git(t, bare, "config", "http.receivepack", "true")
	return bare
}

// Commit adds a commit changing files on branch (made from main when it
// does not exist) of the bare repository at bare, and returns its ID;
// ref, when set, is pointed at it too (refs/pull/7/head, say).
func Commit(t testing.TB, bare, branch string, files map[string]string, ref string) string {
	t.Helper()
	work := t.TempDir()
	Git(t, "", "clone", "-q", bare, work)
	if Git(t, work, "branch", "-r", "--list", "origin/"+branch) == "" {
		Git(t, work, "checkout", "-q", "-b", branch)
	} else {
		Git(t, work, "checkout", "-q", branch)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, work, "add", "-A")
	Git(t, work, "commit", "-qm", "change on "+branch)
	Git(t, work, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	id := strings.TrimSpace(Git(t, work, "rev-parse", "HEAD"))
	if ref != "" {
		Git(t, bare, "update-ref", ref, id)
	}
	return id
}

// Git runs git in dir (a fixed identity, no user or system config).
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}
