package patch

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "core.autocrlf=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// TestParseRealGit: the patch real git writes for every kind of change,
// with the names an agent could choose, reads back file by file with the
// counts git itself gives (numstat) and every new line numbered where
// the file holds it.
func TestParseRealGit(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	var long strings.Builder
	for i := 1; i <= 300; i++ {
		long.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	write(t, dir, "keep.go", long.String())
	write(t, dir, "gone.txt", "bye\n")
	write(t, dir, "moved-from.txt", strings.Repeat("same content for a rename\n", 20))
	write(t, dir, "script.sh", "echo hi\n")
	write(t, dir, "blob.bin", "\x00\x01\x02binary")
	write(t, dir, "noeol.txt", "a\nb")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "base")
	base := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))

	changed := strings.Replace(long.String(), "line 5\n", "line five\n", 1)
	changed = strings.Replace(changed, "line 200\n", "line 200\n\ninserted after an empty line\n", 1)
	write(t, dir, "keep.go", changed)
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))
	require.NoError(t, os.Rename(filepath.Join(dir, "moved-from.txt"), filepath.Join(dir, "moved to.txt")))
	require.NoError(t, os.Chmod(filepath.Join(dir, "script.sh"), 0o755))
	write(t, dir, "blob.bin", "\x00\x01\x03binary, changed")
	write(t, dir, "noeol.txt", "a\nc")
	// Names an agent chooses to confuse a reader of the patch.
	hostile := []string{
		"tab\there.txt", "new\nline.txt", `quote".txt`, "back\\slash.txt", "ünïcode.txt",
		"x b/y.txt", "a/b c/d.txt",
	}
	for _, n := range hostile {
		write(t, dir, n, "hello\n")
	}
	// Content that looks like the patch's own headers.
	write(t, dir, "fake.patch", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n")
	git(t, dir, "add", "-A")
	text := git(t, dir, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", base)

	files, err := Parse(text)
	require.NoError(t, err)
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.Path()] = f
	}
	// git's own counts, names unquoted (-z).
	numstat := git(t, dir, "diff", "--cached", "--numstat", "-z", base)
	want := map[string][2]int{}
	for rec := range strings.SplitSeq(strings.TrimSuffix(numstat, "\x00"), "\x00") {
		fields := strings.SplitN(rec, "\t", 3)
		if len(fields) < 3 || fields[2] == "" {
			continue // a rename's names follow as their own records
		}
		a, _ := strconv.Atoi(fields[0])
		d, _ := strconv.Atoi(fields[1])
		want[fields[2]] = [2]int{a, d}
	}
	for _, n := range append(hostile, "keep.go", "gone.txt", "fake.patch", "noeol.txt") {
		f, ok := byPath[n]
		require.True(t, ok, "file %q not read; read: %v", n, keys(byPath))
		require.Equal(t, want[n], [2]int{f.Added, f.Deleted}, "counts of %q", n)
	}
	require.Equal(t, "deleted", byPath["gone.txt"].Status)
	require.Equal(t, "gone.txt", byPath["gone.txt"].Old)
	require.Equal(t, "added", byPath["tab\there.txt"].Status)
	require.Equal(t, "renamed", byPath["moved to.txt"].Status)
	require.Equal(t, "moved-from.txt", byPath["moved to.txt"].Old)
	require.Equal(t, "mode", byPath["script.sh"].Status)
	require.Equal(t, "100644 → 100755", byPath["script.sh"].Mode)
	require.True(t, byPath["blob.bin"].Binary)
	require.Empty(t, byPath["blob.bin"].Hunks)
	require.Len(t, byPath["keep.go"].Hunks, 2)
	require.Contains(t, byPath["fake.patch"].Hunks[0].Lines[0].Text, "diff --git a/x b/x", "content is content")
	last := byPath["noeol.txt"].Hunks[0].Lines
	require.True(t, last[len(last)-1].NoNewline, "the new last line has no newline")

	// Every line numbered where the new (or old) file holds it.
	for _, name := range []string{"keep.go", "noeol.txt", "fake.patch"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		newLines := strings.Split(string(data), "\n")
		old := ""
		if name != "fake.patch" { // added
			old = git(t, dir, "show", base+":"+name)
		}
		oldLines := strings.Split(old, "\n")
		for _, h := range byPath[name].Hunks {
			for _, l := range h.Lines {
				if l.New > 0 {
					require.Equal(t, newLines[l.New-1], l.Text, "%s: new line %d", name, l.New)
				}
				if l.Old > 0 {
					require.Equal(t, oldLines[l.Old-1], l.Text, "%s: old line %d", name, l.Old)
				}
			}
		}
	}
}

func keys(m map[string]File) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestParseMalformed: a cut, forged or garbled patch is an error saying
// where, never a panic, and the files before it are kept.
func TestParseMalformed(t *testing.T) {
	good := "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
	files, err := Parse(good)
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Equal(t, []Line{{Kind: Context, Old: 1, New: 1, Text: "a"}, {Kind: Deleted, Old: 2, Text: "b"}, {Kind: Added, New: 2, Text: "c"}}, files[0].Hunks[0].Lines)
	for name, text := range map[string]string{
		"cut inside a hunk":       "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
		"more lines than counted": "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n",
		"garbage in a header":     "diff --git a/y b/y\nhello\n",
		"a bad range":             "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -x +1 @@\n+a\n",
		"a huge range":            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,99999999999 +1 @@\n+a\n",
		"a negative range":        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,-3 +1 @@\n+a\n",
		"a line of no kind":       "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n*a\n",
		"an unterminated quote":   "diff --git \"a/x b/x\n--- \"a/x\n+++ b/x\n",
		"a bad escape":            "diff --git a/x b/x\n--- \"a/\\q\"\n+++ b/x\n",
		"a short octal":           "diff --git a/x b/x\n--- \"a/\\30\"\n+++ b/x\n",
		"a nameless file":         "diff --git a/x b/y c\nindex 1..2\n",
		"a wrong side prefix":     "diff --git a/x b/x\n--- b/x\n",
	} {
		t.Run(name, func(t *testing.T) {
			files, err := Parse(good + text)
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrMalformed), "%v", err)
			require.Contains(t, err.Error(), "line ")
			require.NotEmpty(t, files, "the files before the fault are kept")
			require.Equal(t, "x", files[0].Path())
		})
	}
}

// TestGitPaths: unquoted names are taken only when both sides agree (a
// name may hold " b/"); quoted ones exactly.
func TestGitPaths(t *testing.T) {
	for _, c := range []struct {
		in       string
		old, new string
		ok       bool
	}{
		{"a/x b/x", "x", "x", true},
		{"a/x b/y.txt b/x b/y.txt", "x b/y.txt", "x b/y.txt", true},
		{"a/x b/y", "", "", false},
		{`"a/tab\there" "b/tab\there"`, "tab\there", "tab\there", true},
		{`"a/\303\274" "b/\303\274"`, "ü", "ü", true},
		{`"a/x" b/x`, "x", "x", true},
		{`"a/x`, "", "", false},
	} {
		old, new, ok := gitPaths(c.in)
		require.Equal(t, c.ok, ok, c.in)
		if ok {
			require.Equal(t, [2]string{c.old, c.new}, [2]string{old, new}, c.in)
		}
	}
}

// FuzzParse: any text is a patch or an error, never a panic, and every
// line read has a number within its hunk's range.
func FuzzParse(f *testing.F) {
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n")
	f.Add("diff --git \"a/\\t\" \"b/\\t\"\nnew file mode 100644\nGIT binary patch\nliteral 0\n")
	f.Fuzz(func(t *testing.T, text string) {
		files, _ := Parse(text)
		for _, file := range files {
			for _, h := range file.Hunks {
				for _, l := range h.Lines {
					if l.Old != 0 && (l.Old < h.OldStart || l.Old >= h.OldStart+h.OldLines) {
						t.Fatalf("old line %d outside %d,%d", l.Old, h.OldStart, h.OldLines)
					}
					if l.New != 0 && (l.New < h.NewStart || l.New >= h.NewStart+h.NewLines) {
						t.Fatalf("new line %d outside %d,%d", l.New, h.NewStart, h.NewLines)
					}
				}
			}
		}
	})
}
