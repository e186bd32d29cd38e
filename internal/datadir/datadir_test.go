package datadir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuildOfAProgram reads the build of programs built from two commits
// of a module, and of one built with uncommitted changes, from the files.
func TestBuildOfAProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain")
	}
	src, bin := t.TempDir(), t.TempDir()
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "GOTOOLCHAIN=local", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	write := func(text string) {
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte(text), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/p\n\ngo 1.22\n"), 0o644))
	write("package main\n\nfunc main() {}\n")
	run(src, "git", "init", "-q")
	run(src, "git", "add", ".")
	run(src, "git", "commit", "-qm", "one")
	one := run(src, "git", "rev-parse", "HEAD")
	run(src, goBin, "build", "-o", filepath.Join(bin, "one"), ".")
	write("package main\n\nfunc main() { println() }\n")
	run(src, goBin, "build", "-o", filepath.Join(bin, "dirty"), ".")
	run(src, "git", "commit", "-qam", "two")
	two := run(src, "git", "rev-parse", "HEAD")
	run(src, goBin, "build", "-o", filepath.Join(bin, "two"), ".")

	b1, b2, dirty := BuildOf(filepath.Join(bin, "one")), BuildOf(filepath.Join(bin, "two")), BuildOf(filepath.Join(bin, "dirty"))
	require.Contains(t, b1, one[:12])
	require.Contains(t, b2, two[:12])
	require.NotEqual(t, b1, b2)
	require.Equal(t, one[:12]+"+dirty", dirty)
	require.Empty(t, BuildOf(filepath.Join(src, "main.go")), "not a program")
}

// TestLockRecordsTheBuild: the lock's record names the holder's build.
func TestLockRecordsTheBuild(t *testing.T) {
	dir := t.TempDir()
	l, err := Lock(dir)
	require.NoError(t, err)
	defer l.Unlock()
	l.Record("unix:/x.sock", true)
	data, err := os.ReadFile(filepath.Join(dir, "lock"))
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	require.Len(t, lines, 5)
	require.Equal(t, []string{"unix:/x.sock", "background", Build()}, []string{lines[0], lines[2], lines[3]})
}
