package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
)

// goPatch is a patch adding a Go file of n lines, then a modified README.
func goPatch(path string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, n)
	for i := range n {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "+// step %d comments the code\n", i)
		case 1:
			fmt.Fprintf(&b, "+func f%d() string { return \"value %d\" }\n", i, i)
		case 2:
			fmt.Fprintf(&b, "+var x%d = %d\n", i, i)
		default:
			b.WriteString("+\n")
		}
	}
	return b.String()
}

const readme = "diff --git a/README.md b/README.md\nindex 1..2 100644\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n title\n-Helo\n+Hello\n end\n"

func renderDiff(t testing.TB, a *App, d session.Diff, page int, split bool) string {
	t.Helper()
	var b strings.Builder
	p := DiffPage{Session: session.Session{ID: "s1", DisplayTitle: "t"}, Diff: d, CanSteer: true, Local: true, Review: layout(d, page, split)}
	require.NoError(t, a.pages["diff"].Execute(&b, view{Title: "t", User: identity.Principal{User: "u"}, Data: p}))
	return b.String()
}

func testApp(t testing.TB) *App {
	a, err := New(nil, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	return a
}

// TestReviewLayout: flagged files first, each line numbered on its side,
// deletions beside additions in the split view, code highlighted by its
// language, and hostile text escaped with its invisible characters shown.
func TestReviewLayout(t *testing.T) {
	d := session.Diff{Patch: readme + goPatch("main.go", 8) + "diff --git a/.github/ci.yml b/.github/ci.yml\nindex 1..2 100644\n--- a/.github/ci.yml\n+++ b/.github/ci.yml\n@@ -1 +1 @@\n-on: push\n+on: [push, pull_request_target]\n",
		Files: []session.ChangedFile{{Path: "README.md", Status: "modified"}, {Path: "main.go", Status: "added"}, {Path: ".github/ci.yml", Status: "modified", Flagged: true, Reason: "CI configuration"}}}
	rv := layout(d, 1, false)
	require.Empty(t, rv.Problem)
	require.Equal(t, []string{".github/ci.yml", "README.md", "main.go"}, []string{rv.Files[0].Path, rv.Files[1].Path, rv.Files[2].Path}, "flagged first")
	require.Equal(t, 1+1+8, rv.Added)
	readmeRows := rv.Files[1].Hunks[0].Lines
	require.Equal(t, []DiffLine{{Kind: "ctx", Old: 1, New: 1}, {Kind: "del", Old: 2}, {Kind: "add", New: 2}, {Kind: "ctx", Old: 3, New: 3}},
		slices.Collect(func(yield func(DiffLine) bool) {
			for _, r := range readmeRows {
				r.Code = ""
				if !yield(r) {
					return
				}
			}
		}))
	pairs := rv.Files[1].Hunks[0].Pairs
	require.Len(t, pairs, 3, "the deletion beside the addition")
	require.Equal(t, "del", pairs[1].Left.Kind)
	require.Equal(t, "add", pairs[1].Right.Kind)
	require.Contains(t, string(rv.Files[2].Hunks[0].Lines[1].Code), `<span class="t-k">func</span>`, "Go highlighted")
	require.Contains(t, string(rv.Files[2].Hunks[0].Lines[0].Code), `<span class="t-c">`, "a comment")

	html := renderDiff(t, testApp(t), d, 1, false)
	require.Contains(t, html, `href="#f1"`)
	require.Contains(t, html, `id="f1"`)
	require.Contains(t, html, `⚑ CI configuration`)
	require.Contains(t, html, `href="/sessions/s1/reject"`, "reject goes through its confirmation")
	require.NotContains(t, html, `action="/sessions/s1/reject"`, "no one-click reject")
	split := renderDiff(t, testApp(t), d, 1, true)
	require.Contains(t, split, `class="hunk split"`)

	// Hostile content and names: markup stays text, Trojan Source shows.
	evil := "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+if isAdmin \u202e } \u2066// \u2069 { <script>alert(1)</script>\x1b[2J\n" +
		"diff --git \"a/<img src=x onerror=alert(1)>\" \"b/<img src=x onerror=alert(1)>\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/<img src=x onerror=alert(1)>\"\n@@ -0,0 +1 @@\n+\xff\xfe\n"
	html = renderDiff(t, testApp(t), session.Diff{Patch: evil, Files: []session.ChangedFile{{Path: "x.go"}}}, 1, false)
	require.NotContains(t, html, "<script>alert")
	require.NotContains(t, html, "<img src=x")
	require.NotContains(t, html, "\u202e")
	require.NotContains(t, html, "\x1b")
	require.Contains(t, html, "U+202E")
	require.Contains(t, html, "U+2066")
	require.Contains(t, html, "U+001B")
	require.Contains(t, html, `\xff`)

	// A patch that cannot be read is shown as written, with why.
	html = renderDiff(t, testApp(t), session.Diff{Patch: "diff --git a/x b/x\n@@ -1 +1 @@\n*bad\n", Files: []session.ChangedFile{{Path: "x"}}}, 1, false)
	require.Contains(t, html, "could not be laid out")
	require.Contains(t, html, "*bad")
}

// TestReviewPages: a large diff is cut into pages of whole files, the
// table links every file to its page, and a huge file shows a bounded
// part of itself.
func TestReviewPages(t *testing.T) {
	var b strings.Builder
	var files []session.ChangedFile
	for i := range 6 {
		b.WriteString(goPatch(fmt.Sprintf("f%d.go", i), 1000))
		files = append(files, session.ChangedFile{Path: fmt.Sprintf("f%d.go", i)})
	}
	b.WriteString(goPatch("huge.go", fileRows+500))
	d := session.Diff{Patch: b.String(), Files: append(files, session.ChangedFile{Path: "huge.go", Flagged: true, Reason: "generated"})}
	rv := layout(d, 1, false)
	require.Greater(t, rv.Pages, 2)
	require.Len(t, rv.Index, 7)
	shown := 0
	for _, f := range rv.Files {
		shown += len(f.Hunks[0].Lines)
	}
	require.LessOrEqual(t, shown, fileRows, "a page holds at most one huge file's shown lines")
	require.Equal(t, "huge.go", rv.Files[0].Path, "the flagged file first")
	require.Equal(t, 500, rv.Files[0].Cut, "a huge file shows a bounded part, saying how much is not shown")
	last := layout(d, rv.Pages, false)
	require.Equal(t, "f5.go", last.Files[len(last.Files)-1].Path)
	require.Equal(t, rv.Pages, layout(d, 99, false).Page, "a page past the end is the last")
	html := renderDiff(t, testApp(t), d, 2, false)
	require.True(t, strings.Contains(html, `href="?page=1&amp;view=unified#f1"`), "another page's table links to the flagged file on its page")
	require.True(t, strings.Contains(html, `aria-label="pages of the diff"`), "pages to move between")
}

// BenchmarkReviewPage is the server side of a 5,000-line diff's review
// page: laid out, highlighted and rendered (its first page).
func BenchmarkReviewPage(b *testing.B) {
	var p strings.Builder
	var files []session.ChangedFile
	for i := range 5 {
		p.WriteString(goPatch(fmt.Sprintf("pkg/f%d.go", i), 1000))
		files = append(files, session.ChangedFile{Path: fmt.Sprintf("pkg/f%d.go", i)})
	}
	d := session.Diff{Patch: p.String(), Files: files}
	a := testApp(b)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		html := renderDiff(b, a, d, 1, false)
		lat = append(lat, time.Since(start))
		if !strings.Contains(html, `id="f1"`) {
			b.Fatal("no file rendered")
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// TestReviewBounds: what an agent writes cannot make a page huge or hide
// in it: a megabyte line of control bytes, fifty thousand empty files,
// names with bidi overrides, a symbolic link, a flagged file renamed away,
// a file the patch does not show.
func TestReviewBounds(t *testing.T) {
	line := strings.Repeat("\x01", 1<<20)
	d := session.Diff{Patch: "diff --git a/x.txt b/x.txt\nindex 1..2 100644\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+" + line + "\n", Files: []session.ChangedFile{{Path: "x.txt"}}}
	html := renderDiff(t, testApp(t), d, 1, false)
	require.Less(t, len(html), 100<<10, "a megabyte line of control bytes renders small")
	require.Contains(t, html, "U+0001 ×2000")
	require.Contains(t, html, "more bytes of this line are not shown")

	var many strings.Builder
	var files []session.ChangedFile
	for i := range 50000 {
		fmt.Fprintf(&many, "diff --git a/e%d b/e%d\nnew file mode 100644\nindex 0000000..e69de29\n", i, i)
		files = append(files, session.ChangedFile{Path: fmt.Sprintf("e%d", i)})
	}
	rv := layout(session.Diff{Patch: many.String(), Files: files}, 1, false)
	require.Greater(t, rv.Pages, 10, "empty files count on a page too")
	require.LessOrEqual(t, len(rv.Files), pageRows)
	require.LessOrEqual(t, len(rv.Table), pageRows)

	tricky := "diff --git \"a/install\\342\\200\\256hs.md\" \"b/install\\342\\200\\256hs.md\"\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ \"b/install\\342\\200\\256hs.md\"\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n" +
		"diff --git a/.github/workflows/ci.yml b/docs/ci.txt\nsimilarity index 100%\nrename from .github/workflows/ci.yml\nrename to docs/ci.txt\n"
	d = session.Diff{Patch: tricky, Files: []session.ChangedFile{{Path: "install\u202ehs.md"}, {Path: ".github/workflows/ci.yml", Flagged: true, Reason: "CI configuration"}, {Path: "forgotten.txt"}}}
	rv = layout(d, 1, false)
	html = renderDiff(t, testApp(t), d, 1, false)
	require.NotContains(t, html, "\u202e", "no raw bidi override in a name")
	require.Contains(t, html, `install<span class="hidden-char" title="an invisible character">U+202E</span>hs.md`)
	require.Contains(t, html, "a symbolic link")
	moved := rv.Index[slices.IndexFunc(rv.Index, func(e FileEntry) bool { return e.Path == "docs/ci.txt" })]
	require.True(t, moved.Flagged, "a flagged file renamed away keeps its flag")
	require.Equal(t, []string{"forgotten.txt"}, rv.Missing)
	require.Contains(t, html, "Not shown here though it changed")
}

// TestDiffViewIsRemembered: the layout an address names is remembered,
// and a review whose address names none opens in it.
func TestDiffViewIsRemembered(t *testing.T) {
	rec := httptest.NewRecorder()
	require.Equal(t, "split", diffView(rec, httptest.NewRequest(http.MethodGet, "/sessions/s1/diff?view=split", nil)))
	cookies := rec.Result().Cookies()
	require.Len(t, cookies, 1)
	require.True(t, cookies[0].HttpOnly)
	next := httptest.NewRequest(http.MethodGet, "/sessions/s2/diff", nil)
	next.AddCookie(cookies[0])
	require.Equal(t, "split", diffView(httptest.NewRecorder(), next))
	require.Equal(t, "unified", diffView(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/sessions/s2/diff", nil)))
	back := httptest.NewRecorder()
	require.Equal(t, "unified", diffView(back, httptest.NewRequest(http.MethodGet, "/sessions/s1/diff?view=unified", nil)))
	require.Equal(t, "unified", back.Result().Cookies()[0].Value)
}
