package policy

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// corpusCommands are the commands of the analyzer's corpora.
func corpusCommands(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../shellcheck/testdata/*.tsv")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpora: %v", err)
	}
	var out []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			cmd, _, _ := strings.Cut(line, "\t")
			if strings.HasPrefix(cmd, `"`) {
				if cmd, err = strconv.Unquote(cmd); err != nil {
					t.Fatalf("%s: %q: %v", f, line, err)
				}
			}
			out = append(out, cmd)
		}
		fh.Close()
	}
	return out
}

var (
	anyValue  = []Value{Disabled, AllowedWithPermission, AllowedWithoutPermission}
	toolNames = []string{"read_file", "write_file", "edit_file", "list_dir", "search", "ask_user", "archive_session", "run_command",
		"sessions_summary", "sessions_spawn", "sessions_send", "delegate", "mcp__calc__add"}
	freeEntries = append([]string{"git", "git log", "go test", "go", "make", "npm test", "npm", "python3", "rm", "find", "sed", "env",
		"bash", "sh", "xargs", "cp", "mv", "curl", "docker", "sudo"}, DefaultCommands...)
)

// randomPolicy is a policy a project, an agent or a delegation might
// write.
func randomPolicy(r *rand.Rand) *Policy {
	p := &Policy{Default: anyValue[r.IntN(3)], Tools: map[string]Value{}, ContinueAfterToolRejection: r.IntN(2) == 0,
		ApprovalTTL: time.Duration(r.IntN(48)+1) * time.Hour}
	for _, n := range toolNames {
		if r.IntN(3) == 0 {
			p.Tools[n] = anyValue[r.IntN(3)]
		}
	}
	for _, c := range freeEntries {
		if r.IntN(2) == 0 {
			p.Commands = append(p.Commands, c)
		}
	}
	return p
}

// TestDelegationNeverLoosens: over random policy pairs, a delegated
// session's policy (its parent's tightened by what the delegation asks,
// Within) never decides a call more leniently than the parent's, for
// every tool and every command of the analyzer's corpora; nor does a
// grandchild's, tightened once more.
func TestDelegationNeverLoosens(t *testing.T) {
	if testing.Short() {
		t.Skip("analyzes the corpora many times")
	}
	commands := corpusCommands(t)
	r := rand.New(rand.NewPCG(7, 31))
	pairs := 12
	for i := range pairs {
		parent, asked, again := randomPolicy(r), randomPolicy(r), randomPolicy(r)
		child := Within(parent, asked)
		grandchild := Within(child, again)
		for _, n := range toolNames {
			p, c, g := parent.Evaluate(n, []byte(`{}`)), child.Evaluate(n, []byte(`{}`)), grandchild.Evaluate(n, []byte(`{}`))
			if n == ShellTool {
				continue
			}
			if c.Verdict < p.Verdict || g.Verdict < c.Verdict {
				t.Fatalf("pair %d, tool %s: parent %s, child %s, grandchild %s", i, n, p.Verdict, c.Verdict, g.Verdict)
			}
		}
		if child.ApprovalTTL > parent.ApprovalTTL || child.ContinueAfterToolRejection && !parent.ContinueAfterToolRejection {
			t.Fatalf("pair %d: the child's approvals or rejections are looser than its parent's", i)
		}
		for _, cmd := range commands {
			args := []byte(strconv.Quote(cmd))
			args = append(append([]byte(`{"command":`), args...), '}')
			p, c, g := parent.Evaluate(ShellTool, args), child.Evaluate(ShellTool, args), grandchild.Evaluate(ShellTool, args)
			if c.Verdict < p.Verdict || g.Verdict < c.Verdict {
				t.Fatalf("pair %d, command %q: parent %s (%s), child %s (%s), grandchild %s (%s)\nparent free: %v\nchild free: %v",
					i, cmd, p.Verdict, p.Rule, c.Verdict, c.Rule, g.Verdict, g.Rule, parent.Commands, child.Commands)
			}
		}
	}
}
