package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// atk3Copy is a working copy cloned from repo(t), with its origin and base.
func atk3Copy(t *testing.T) (src, base, work string) {
	t.Helper()
	src, base = repo(t)
	work = filepath.Join(t.TempDir(), "copy")
	require.NoError(t, Clone(context.Background(), src, work))
	return src, base, work
}

// atk3Roundtrip checkpoints work and restores it on "another node".
func atk3Roundtrip(t *testing.T, src, base, work string) (again string, changes []Change) {
	t.Helper()
	ctx := context.Background()
	cap_changes, err := Capture(ctx, work, base)
	changes = cap_changes.Files
	require.NoError(t, err)
	again = filepath.Join(t.TempDir(), "again")
	err = Restore(ctx, src, again, base, nil, changes)
	require.NoError(t, err)
	return again, changes
}

// TestOddNamesRoundTrip: names with newlines, tabs, quotes,
// backslashes, leading dashes, colons, pathspec magic and unicode survive a
// checkpoint and a restore byte for byte, and nothing lands outside the copy.
// (Passes: a defence that holds.)
func TestOddNamesRoundTrip(t *testing.T) {
	src, base, work := atk3Copy(t)
	names := []string{"new\nline", "tab\there", `back\slash`, "-rf", "--end-of-options", ":(top)magic", "*glob?", "quo\"te", "ünï/cødé", "sp ace/ trailing ", "a:b", "\u202egnp.exe", ".gitx", ".git-keep", "dir/.gitignore2"}
	for i, n := range names {
		p := filepath.Join(work, n)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte{byte(i), 0, 0xff, '\n'}, 0o644))
	}
	again, _ := atk3Roundtrip(t, src, base, work)
	for i, n := range names {
		got, err := os.ReadFile(filepath.Join(again, n))
		require.NoError(t, err, n)
		require.Equal(t, []byte{byte(i), 0, 0xff, '\n'}, got, n)
	}
	// The restored copy's tree is the recorded one.
	cap_tree1, err := Capture(context.Background(), work, base)
	tree1 := cap_tree1.Tree
	require.NoError(t, err)
	cap_tree2, err := Capture(context.Background(), again, base)
	tree2 := cap_tree2.Tree
	require.NoError(t, err)
	require.Equal(t, tree1, tree2)
}

// TestChangesNeverReadsThroughLinks: links to host files (absolute,
// relative climbing out, to the copy's own .git/config) and a hard link are
// recorded as their targets / the copy's own bytes; nothing of the host's
// file reaches the checkpoint. (Passes.)
func TestChangesNeverReadsThroughLinks(t *testing.T) {
	_, base, work := atk3Copy(t)
	secret := filepath.Join(t.TempDir(), "host-secret")
	require.NoError(t, os.WriteFile(secret, []byte("TOP-SECRET-HOST-BYTES"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(work, "abs")))
	require.NoError(t, os.Symlink("../../../../../../../../"+secret, filepath.Join(work, "rel")))
	require.NoError(t, os.Symlink(".git/config", filepath.Join(work, "cfg")))
	require.NoError(t, os.MkdirAll(filepath.Join(work, "d"), 0o755))
	require.NoError(t, os.Symlink(filepath.Dir(secret), filepath.Join(work, "d", "dirlink")))
	cap_changes, err := Capture(context.Background(), work, base)
	changes := cap_changes.Files
	require.NoError(t, err)
	for _, c := range changes {
		require.NotContains(t, string(c.Data), "TOP-SECRET-HOST-BYTES", c.Path)
		require.NotContains(t, string(c.Data), "[core]", c.Path)
		if c.Mode != "" {
			require.Equal(t, "120000", c.Mode, c.Path)
		}
	}
}

// TestRestoreKeepsBytes: the copy a checkpoint restores must have
// the bytes the copy had. An agent-written .gitattributes (no driver
// needed: git's built-in conversions) makes git add store something else
// than the file: CRLF normalised to LF ("text"), $Id$ collapsed ("ident"),
// UTF-16 turned into UTF-8 ("working-tree-encoding"). Reading git's blob
// would restore other bytes; Capture reads the copy's own.
func TestRestoreKeepsBytes(t *testing.T) {
	src, base, work := atk3Copy(t)
	require.NoError(t, os.WriteFile(filepath.Join(work, ".gitattributes"), []byte("*.bat text eol=crlf\n*.txt text\n*.c ident\n"), 0o644))
	files := map[string][]byte{
		"run.bat":  []byte("@echo off\r\nexit /b 0\r\n"),
		"note.txt": []byte("windows\r\nline\r\n"),
		"x.c":      []byte("/* $Id: kept-by-the-agent $ */\n"),
	}
	for n, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(work, n), b, 0o644))
	}
	again, _ := atk3Roundtrip(t, src, base, work)
	for n, want := range files {
		got, err := os.ReadFile(filepath.Join(again, n))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s restored with other bytes than the copy had", n)
	}
}

// TestLargeFileSilentlyDropped: a file over MaxFileSize (a sparse one
// costs nothing) is left out of the stage; the checkpoint must say so
// (Skipped names it), never record the base's version as if it were the
// copy's.
func TestLargeFileSilentlyDropped(t *testing.T) {
	_, base, work := atk3Copy(t)
	f, err := os.OpenFile(filepath.Join(work, "main.go"), os.O_WRONLY|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("package main // the agent's new version\n")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxFileSize+1))
	require.NoError(t, f.Close())
	st, err := Capture(context.Background(), work, base)
	require.NoError(t, err)
	for _, c := range st.Files {
		require.NotEqual(t, "main.go", c.Path, "not held, so not recorded")
	}
	require.NotEmpty(t, st.Skipped)
	require.Contains(t, strings.Join(st.Skipped, "\n"), "main.go", "what the checkpoint could not hold is named")
}

// TestNestedRepositorySilentlyDropped: a nested repository with a
// commit (a gitlink) cannot be held by a checkpoint: it must say so.
func TestNestedRepositorySilentlyDropped(t *testing.T) {
	_, base, work := atk3Copy(t)
	nested := filepath.Join(work, "vendor", "lib")
	require.NoError(t, os.MkdirAll(nested, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(nested, "lib.go"), []byte("package lib\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "n"}} {
		out, err := exec.Command("git", append([]string{"-C", nested}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	st, err := Capture(context.Background(), work, base)
	require.NoError(t, err)
	require.Contains(t, strings.Join(st.Skipped, "\n"), "vendor/lib: a nested repository")
}

// TestRestoreEmptyCopyAfterAccept: a session without a repository
// (an empty copy) whose diff was accepted has the snapshot commit as its
// base. With the bundles of its first commit and of the snapshot, the copy
// made again has the very same base and every accepted file.
func TestRestoreEmptyCopyAfterAccept(t *testing.T) {
	ctx := context.Background()
	work := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.MkdirAll(work, 0o700))
	require.NoError(t, Init(ctx, work))
	base0, err := Head(ctx, work)
	require.NoError(t, err)
	root, err := BaseBundle(ctx, work, base0, "")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "accepted.go"), []byte("package accepted\n"), 0o644))
	d, err := Compute(ctx, work, base0)
	require.NoError(t, err)
	base1, err := Snapshot(ctx, work, base0, d.Tree, "accepted", Author{})
	require.NoError(t, err)
	snap, err := BaseBundle(ctx, work, base1, base0)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "later.go"), []byte("package later\n"), 0o644))
	st, err := Capture(ctx, work, base1)
	require.NoError(t, err)

	again := filepath.Join(t.TempDir(), "again")
	require.NoError(t, Restore(ctx, "", again, base1, [][]byte{root, snap}, st.Files))
	require.FileExists(t, filepath.Join(again, "later.go"))
	require.FileExists(t, filepath.Join(again, "accepted.go"), "the accepted file was in the copy")
	head, err := Head(ctx, again)
	require.NoError(t, err)
	require.Equal(t, base1, head, "the very same base")
	st2, err := Capture(ctx, again, base1)
	require.NoError(t, err)
	require.Equal(t, st.Tree, st2.Tree)
}

// TestRestoreRepoCopyAfterAccept: a session with a repository whose
// diff was accepted has the copy-only snapshot commit as its base; its
// bundle (relative to the repository's base) makes it again.
func TestRestoreRepoCopyAfterAccept(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	work, snap := acceptedCommit(t, src, base)
	bundle, err := BaseBundle(ctx, work, snap, base)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "later.go"), []byte("package later\n"), 0o644))
	st, err := Capture(ctx, work, snap)
	require.NoError(t, err)
	again := filepath.Join(t.TempDir(), "again")
	require.NoError(t, Restore(ctx, src, again, snap, [][]byte{bundle}, st.Files), "restore after an acceptance")
	st2, err := Capture(ctx, again, snap)
	require.NoError(t, err)
	require.Equal(t, st.Tree, st2.Tree)
	// Without the bundle, the base is named as what is missing.
	require.ErrorContains(t, Restore(ctx, src, filepath.Join(t.TempDir(), "x"), snap, nil, st.Files), "cannot be made again")
}

// TestRestoreHostilePaths: checkpoint entries that did not come from
// git (a tampered or buggy store) cannot leave the copy or reach its .git:
// through a link to .git, nested ".git" components, case variants, NUL in
// a link, odd modes. (Checks what os.Root and safePath stop.)
func TestRestoreHostilePaths(t *testing.T) {
	ctx := context.Background()
	src, base := repo(t)
	outside := t.TempDir()
	for name, changes := range map[string][]Change{
		"link to .git then through it": {{Path: "g", Mode: "120000", Data: []byte(".git")}, {Path: "g/hooks/pre-commit", Mode: "100755", Data: []byte("#!/bin/sh\ntouch " + outside + "/ran\n")}},
		"link to ../ then through it":  {{Path: "up", Mode: "120000", Data: []byte("..")}, {Path: "up/planted", Mode: "100644", Data: []byte("x")}},
		"absolute link through":        {{Path: "abs", Mode: "120000", Data: []byte(outside)}, {Path: "abs/planted", Mode: "100644", Data: []byte("x")}},
		"nested .git component":        {{Path: "sub/.git/config", Mode: "100644", Data: []byte("[core]\n\tfsmonitor = touch " + outside + "/ran\n")}},
		"deletion through a link":      {{Path: "abs", Mode: "120000", Data: []byte(outside)}, {Path: "abs/keep", Mode: ""}},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o644))
		dir := filepath.Join(t.TempDir(), "c")
		_ = Restore(ctx, src, dir, base, nil, changes)
		require.NoFileExists(t, filepath.Join(outside, "planted"), name)
		require.FileExists(t, filepath.Join(outside, "keep"), name)
		if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit")); err == nil {
			t.Errorf("%s: Restore wrote into the copy's .git (.git/hooks/pre-commit) through a link the same checkpoint made", name)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "sub", ".git", "config")); err == nil {
			t.Errorf("%s: Restore wrote a nested .git/config (%q): host git on the copy reads it only when it enters sub (Changes skips/flags it), but the checkpoint should never carry it", name, b)
		}
	}
}

// TestManyEmptyFilesCostNothing documents (passes) that
// MaxCheckpoint counts content bytes only: empty files with long names
// make a checkpoint whose file list is megabytes while counting zero bytes.
// The engine stores the whole list again after every call that changes
// any file, and reads every earlier checkpoint of the session on each call
// (engine/checkpoint.go: Store.Checkpoints to find the last one), so the
// database grows and each call's read grows with calls x files.
func TestManyEmptyFilesCostNothing(t *testing.T) {
	_, base, work := atk3Copy(t)
	const n = 20000
	long := strings.Repeat("n", 200)
	for i := 0; i < n; i++ {
		d := filepath.Join(work, fmt.Sprintf("d%03d", i%200))
		if i < 200 {
			require.NoError(t, os.MkdirAll(d, 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("%s%06d", long, i)), nil, 0o644))
	}
	cap_changes, err := Capture(context.Background(), work, base)
	changes := cap_changes.Files
	require.NoError(t, err)
	require.Len(t, changes, n)
	meta, content := 0, 0
	for _, c := range changes {
		meta += len(c.Path) + len(c.Mode) + 64 + 30 // path, mode, blob ID, JSON
		content += len(c.Data)
	}
	t.Logf("%d files: %d content bytes counted against MaxCheckpoint, ~%d bytes of file list stored per checkpoint row", n, content, meta)
}

// TestHardLinksCountAsNames: the file budget bounds inodes, but a hard
// link is a name without a file; the review made one file and linked it
// tens of thousands of times. The host's walk of the copy stops at
// MaxNames names, with an error that says what to do; a copy under the
// bound is walked as before.
func TestHardLinksCountAsNames(t *testing.T) {
	old := MaxNames
	MaxNames = 50
	t.Cleanup(func() { MaxNames = old })
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "one"), []byte("x"), 0o644))
	for i := range 30 {
		require.NoError(t, os.Link(filepath.Join(dir, "one"), filepath.Join(dir, fmt.Sprintf("link%d", i))))
	}
	_, err := scan(context.Background(), dir)
	require.NoError(t, err, "31 names: under the bound")
	for i := 30; i < 100; i++ {
		require.NoError(t, os.Link(filepath.Join(dir, "one"), filepath.Join(dir, fmt.Sprintf("link%d", i))))
	}
	_, err = scan(context.Background(), dir)
	require.ErrorIs(t, err, ErrTooManyNames)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	MaxNames = 1 << 20
	for i := 100; i < 5000; i++ {
		require.NoError(t, os.Link(filepath.Join(dir, "one"), filepath.Join(dir, fmt.Sprintf("link%d", i))))
	}
	_, err = scan(ctx, dir)
	require.ErrorIs(t, err, context.Canceled, "the walk ends with its context")
}
