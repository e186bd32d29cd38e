package api

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/stretchr/testify/require"
)

func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("team a\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-qm", "init"}} {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

func startOn(t *testing.T, e *attackEnv, token, project, repo string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"project": project, "message": "hi", "repo": repo})
	return e.call(t, token, "POST", "/v1/sessions", "application/json", string(body))
}

// The attack: without PADDOCK_REPOSITORY_ROOTS, a member of team-b started
// a session on team-a's repository and on the data directory, and the
// errors told which server paths exist. On a shared server, repositories
// are now confined by default, the data directory never is one, and a
// refusal reads the same whether the path exists or not.
func TestProjectsCannotReachEachOthersRepositories(t *testing.T) {
	e := attackServer(t)
	data := t.TempDir()
	e.server.Service.DataDir = data
	gitRepo(t, filepath.Join(data, "workspaces", "other-session")) // another session's live copy
	e.project(t, "team-a")
	e.project(t, "team-b")
	bob := e.user(t, "bob")
	e.member(t, "team-b", "bob", "member")
	teamA := gitRepo(t, filepath.Join(t.TempDir(), "team-a-app"))

	code, body := startOn(t, e, bob, "team-b", teamA)
	require.Equal(t, 400, code, "a member of team-b started a session on team-a's repository: %s", body)
	_, missing := startOn(t, e, bob, "team-b", filepath.Join(filepath.Dir(teamA), "no-such-repo"))
	// The message quotes the path as given (clipped at 64 bytes, as every
	// quoted value is): replaced by X, the two must read alike.
	require.Equal(t, strings.ReplaceAll(body, clip.String(teamA, 64), "X"), strings.ReplaceAll(missing, clip.String(filepath.Join(filepath.Dir(teamA), "no-such-repo"), 64), "X"),
		"a refused path reads the same whether it exists or not")
	require.Contains(t, body, "PADDOCK_REPOSITORY_ROOTS", "the refusal says what to do")

	for _, repo := range []string{data, filepath.Join(data, "workspaces", "other-session"), filepath.Dir(data)} {
		code, body := startOn(t, e, e.admin, "team-a", repo)
		require.Equal(t, 400, code, "the data directory (%s) is never a repository, not even an administrator's: %s", repo, body)
	}
	link := filepath.Join(t.TempDir(), "innocent")
	require.NoError(t, os.Symlink(filepath.Join(data, "workspaces", "other-session"), link))
	code, body = startOn(t, e, e.admin, "team-a", link)
	require.Equal(t, 400, code, "a link into the data directory: %s", body)

	// Controls: a server administrator names a repository; with roots, a
	// member starts on their own project's, and not on another's.
	code, body = startOn(t, e, e.admin, "team-a", teamA)
	require.Equal(t, 201, code, body)
	roots := t.TempDir()
	e.server.Service.RepositoryRoots = []string{roots}
	mine := gitRepo(t, filepath.Join(roots, "team-b", "app"))
	theirs := gitRepo(t, filepath.Join(roots, "team-a", "app"))
	code, body = startOn(t, e, bob, "team-b", mine)
	require.Equal(t, 201, code, body)
	code, body = startOn(t, e, bob, "team-b", theirs)
	require.Equal(t, 400, code, body)

	// The review's attack: a repository under team-b's root whose .git is
	// a "gitdir:" file or a link into another team's repository (or a
	// session's copy), or whose objects are borrowed from one.
	viaFile := filepath.Join(roots, "team-b", "evil1")
	require.NoError(t, os.MkdirAll(viaFile, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(viaFile, ".git"), []byte("gitdir: "+filepath.Join(theirs, ".git")+"\n"), 0o644))
	viaLink := filepath.Join(roots, "team-b", "evil2")
	require.NoError(t, os.MkdirAll(viaLink, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(theirs, ".git"), filepath.Join(viaLink, ".git")))
	borrowing := gitRepo(t, filepath.Join(roots, "team-b", "evil3"))
	require.NoError(t, os.WriteFile(filepath.Join(borrowing, ".git", "objects", "info", "alternates"), []byte(filepath.Join(theirs, ".git", "objects")+"\n"), 0o644))
	linkedObjects := gitRepo(t, filepath.Join(roots, "team-b", "evil4"))
	require.NoError(t, os.RemoveAll(filepath.Join(linkedObjects, ".git", "objects")))
	require.NoError(t, os.Symlink(filepath.Join(theirs, ".git", "objects"), filepath.Join(linkedObjects, ".git", "objects")))
	for _, repo := range []string{viaFile, viaLink, borrowing, linkedObjects} {
		code, body = startOn(t, e, bob, "team-b", repo)
		require.Equal(t, 400, code, "%s: %s", repo, body)
	}
}
