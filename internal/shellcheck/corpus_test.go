package shellcheck

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// corpusFree is the free list the corpus files assume (their header).
var corpusFree = []string{"ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "echo", "pwd",
	"git status", "git diff", "git log", "go test", "go build", "go vet"}

type corpusLine struct {
	line    int
	command string
	want    Verdict
	reason  string
}

// readCorpus reads command<TAB>verdict<TAB>reason[<TAB>hard] lines; a
// command starting with '"' is a JSON string literal.
func readCorpus(t testing.TB, path string) []corpusLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		cols := strings.SplitN(line, "\t", 4)
		if len(cols) < 3 {
			t.Fatalf("%s:%d: want command<TAB>verdict<TAB>reason", path, n)
		}
		cmd := cols[0]
		if strings.HasPrefix(cmd, `"`) {
			if cmd, err = strconv.Unquote(cmd); err != nil {
				t.Fatalf("%s:%d: bad JSON string: %v", path, n, err)
			}
		}
		v, err := ParseVerdict(cols[1])
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, corpusLine{line: n, command: cmd, want: v, reason: cols[2]})
	}
	return out
}

// stricter are the lines of the shared corpus that Paddock judges more
// strictly than it says, deliberately (each is "at least ask" there).
var stricter = map[string]string{
	`python3 -c 'import os; os.system("sudo id")'`: "literal code fed to an interpreter that names a refused program is refused",
}

func TestCorpus(t *testing.T) {
	a := New(corpusFree)
	for _, file := range corpusFiles() {
		for _, c := range readCorpus(t, file) {
			got := a.Analyze(c.command)
			if _, ok := stricter[c.command]; ok && file == sharedCorpus && got.Verdict == Refuse && c.want == Ask {
				continue
			}
			if got.Verdict != c.want {
				t.Errorf("%s:%d: %q: got %s, want %s (%s)", file, c.line, c.command, got.Verdict, c.want, c.reason)
				for _, p := range got.Pieces {
					t.Logf("    %s %s: %s (%s)", p.Verdict, p.Rule, p.Command, p.Reason)
				}
			}
		}
	}
}

// TestEveryday: what agents run all day while reading is free under the
// built-in default free list; at most 10% of the corpus asks, each with
// its reason listed there.
func TestEveryday(t *testing.T) {
	a := New(DefaultFree)
	lines := readCorpus(t, "testdata/everyday.tsv")
	asks := 0
	for _, c := range lines {
		got := a.Analyze(c.command)
		if got.Verdict == Ask {
			asks++
		}
		if got.Verdict != c.want {
			t.Errorf("everyday.tsv:%d: %q: got %s, want %s (%s)", c.line, c.command, got.Verdict, c.want, c.reason)
			for _, p := range got.Pieces {
				if p.Verdict != Allow {
					t.Logf("    %s %s: %s (%s)", p.Verdict, p.Rule, p.Command, p.Reason)
				}
			}
		}
	}
	if len(lines) < 150 {
		t.Errorf("the everyday corpus has %d commands, want at least 150", len(lines))
	}
	if asks*10 > len(lines) {
		t.Errorf("%d of %d everyday commands ask, more than 10%%", asks, len(lines))
	}
	t.Logf("everyday: %d commands, %d ask", len(lines), asks)
}

// TestGeneralize: the classes of issue 27 under the built-in default free
// list, as an agent would meet them.
func TestGeneralize(t *testing.T) {
	a := New(DefaultFree)
	for _, c := range readCorpus(t, "testdata/corpus-generalize.tsv") {
		got := a.Analyze(c.command)
		if got.Verdict != c.want {
			t.Errorf("corpus-generalize.tsv:%d: %q: got %s, want %s (%s)", c.line, c.command, got.Verdict, c.want, c.reason)
			for _, p := range got.Pieces {
				t.Logf("    %s %s: %s (%s)", p.Verdict, p.Rule, p.Command, p.Reason)
			}
		}
	}
}
