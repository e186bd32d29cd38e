package forgetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GiteaVersion is the Gitea the tests run, built from the Go module
// proxy by test/forge/build.sh into GiteaDir.
const (
	GiteaVersion = "1.27.3"
	GiteaDir     = "/var/cache/paddock-gitea"
)

// Gitea is a real Gitea server on loopback, on a private SQLite database,
// with an administrator and a token of theirs.
type Gitea struct {
	URL, User, Token string
}

// NewGitea starts Gitea for the test (its binary in GiteaDir): the test
// skips when there is none, naming the script that builds it.
func NewGitea(t testing.TB) *Gitea {
	t.Helper()
	bin := filepath.Join(GiteaDir, "gitea-"+GiteaVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no Gitea at %s: build it with test/forge/build.sh %s", bin, GiteaDir)
	}
	src := filepath.Join(GiteaDir, "src-"+GiteaVersion) // its options (locales), which a build without bindata reads
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	ini := fmt.Sprintf(`APP_NAME = paddock-test
RUN_MODE = prod
WORK_PATH = %[1]s
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
[server]
STATIC_ROOT_PATH = %[4]s
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
ROOT_URL = %[3]s/
DISABLE_SSH = true
OFFLINE_MODE = true
LFS_START_SERVER = false
[database]
DB_TYPE = sqlite3
PATH = %[1]s/gitea.db
[security]
INSTALL_LOCK = true
SECRET_KEY = paddock-test-secret-key-0123456789
[service]
DISABLE_REGISTRATION = true
[repository]
ROOT = %[1]s/repos
DEFAULT_BRANCH = main
[log]
MODE = console
LEVEL = error
[cron]
ENABLED = false
`, dir, port, url, src)
	cfg := filepath.Join(dir, "app.ini")
	if err := os.WriteFile(cfg, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(bin, append(args, "-c", cfg)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GITEA_WORK_DIR=" + dir}
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if x, ok := err.(*exec.ExitError); ok {
				stderr = x.Stderr
			}
			t.Fatalf("gitea %v: %v: %s %s", args, err, out, stderr)
		}
		return string(out)
	}
	run("migrate")
	g := &Gitea{URL: url, User: "paddock"}
	run("admin", "user", "create", "--admin", "--username", g.User, "--password", "paddock-Passw0rd!", "--email", "paddock@example.com", "--must-change-password=false")
	g.Token = strings.TrimSpace(run("admin", "user", "generate-access-token", "--username", g.User, "--scopes", "all", "--raw"))
	web := exec.Command(bin, "web", "-c", cfg)
	web.Dir = dir
	web.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GITEA_WORK_DIR=" + dir}
	log, err := os.Create(filepath.Join(dir, "web.log"))
	if err != nil {
		t.Fatal(err)
	}
	web.Stdout, web.Stderr = log, log
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Process.Kill(); _ = web.Wait(); log.Close() })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get(url + "/api/v1/version")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(dir, "web.log"))
			t.Fatalf("gitea did not answer within 2 minutes: %v\n%s", err, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return g
}

// API calls Gitea's API as the administrator and decodes its answer into
// out (when not nil), failing the test on a status over 299.
func (g *Gitea) API(t testing.TB, method, path string, in, out any) {
	t.Helper()
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), method, g.URL+"/api/v1"+path, &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+g.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(res.Body)
	if res.StatusCode > 299 {
		t.Fatalf("gitea %s %s: %d %s", method, path, res.StatusCode, raw.String())
	}
	if out != nil {
		if err := json.Unmarshal(raw.Bytes(), out); err != nil {
			t.Fatalf("gitea %s %s: %v: %s", method, path, err, raw.String())
		}
	}
}

// NewUser adds a user to Gitea with a token of theirs (all scopes), and
// gives them write access to the administrator's repository repo.
func (g *Gitea) NewUser(t testing.TB, name, repo string) (token string) {
	t.Helper()
	password := "paddock-Passw0rd!" + name
	g.API(t, http.MethodPost, "/admin/users", map[string]any{"username": name, "email": name + "@example.com", "password": password,
		"must_change_password": false}, nil)
	g.API(t, http.MethodPut, "/repos/"+g.User+"/"+repo+"/collaborators/"+name, map[string]any{"permission": "write"}, nil)
	// A token is made by its user alone, signed in with their password.
	body, _ := json.Marshal(map[string]any{"name": "paddock-test", "scopes": []string{"all"}})
	req, err := http.NewRequest(http.MethodPost, g.URL+"/api/v1/users/"+name+"/tokens", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(name, password)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		SHA1 string `json:"sha1"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated || out.SHA1 == "" {
		t.Fatalf("gitea: a token for %s: %d %v", name, res.StatusCode, err)
	}
	return out.SHA1
}

// DeleteToken deletes the token NewUser made for user name.
func (g *Gitea) DeleteToken(t testing.TB, name string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, g.URL+"/api/v1/users/"+name+"/tokens/paddock-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(name, "paddock-Passw0rd!"+name)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("gitea: deleting %s's token: %d", name, res.StatusCode)
	}
}
