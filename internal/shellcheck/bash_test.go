package shellcheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// TestBashReadsWithoutRunning: asking bash how it reads a command runs
// nothing of it, whatever the command does to close the function it is
// given as early as it can.
func TestBashReadsWithoutRunning(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o777))
	mark := filepath.Join(dir, "ran")
	b := &BashParser{}
	for _, cmd := range []string{
		"}; touch " + mark + "; f() {",
		"ls\n}\ntouch " + mark + "\n__x() {\nls",
		"ls\n}\necho x > " + mark + "\n{ :; } < <(touch " + mark + ")\n__x() {\nls",
		"ls\n}\ncat <<E\n$(touch " + mark + ")\nE\n{ :; } <<E\n$(touch " + mark + ")\nE\nfor i in 1; do touch " + mark + "; done\n__x() {\nls",
		"ls\n}\n/usr/bin/touch " + mark + "\nexec /usr/bin/touch " + mark + "\nenable -f x y\n__x() {\nls",
		"ls\n}\nuntil false; do :; done\n__x() {\nls",
		"ls\n}\ndeclare -f " + canonFunc + "\n" + canonFunc + "() { echo sudo id; }\n__x() {\nls",
	} {
		out, err := b.Canonical(cmd)
		if _, statErr := os.Stat(mark); statErr == nil {
			t.Fatalf("asking bash about %q ran part of it", cmd)
		}
		if err == nil {
			// Whatever bash printed, the analyzer's reading differs from
			// it, so the command is not allowed.
			if v := New([]string{"ls"}).Analyze(cmd).Verdict; v == Allow {
				t.Errorf("%q is allowed (bash printed %q)", cmd, out)
			}
		}
	}
}

// TestBashCanonical: bash's printing of a command, read back, and the
// errors it gives.
func TestBashCanonical(t *testing.T) {
	b := &BashParser{}
	out, err := b.Canonical("ls -la # a comment \\\nsudo id")
	if err != nil {
		t.Fatal(err)
	}
	f, err := bashBody(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := printNode(f); !strings.Contains(got, "sudo id") || strings.Contains(got, "comment") {
		t.Errorf("bash's reading %q: want the comment ended at the newline and sudo id a command", got)
	}
	if _, err := b.Canonical("echo ("); !errors.Is(err, ErrBashSyntax) {
		t.Errorf("a syntax error: got %v, want ErrBashSyntax", err)
	}
	// A second answer comes from the cache, the same.
	again, err := b.Canonical("ls -la # a comment \\\nsudo id")
	if err != nil || again != out {
		t.Errorf("cached answer %q, %v; want %q", again, err, out)
	}
	missing := New([]string{"ls"}).WithBash(&BashParser{Path: "/nonexistent/bash"})
	r := missing.Analyze("ls")
	if r.Verdict != Ask || r.Pieces[len(r.Pieces)-1].Rule != "bash-unavailable" {
		t.Errorf("without bash: %+v, want ask (bash-unavailable)", r)
	}
	if r := New([]string{"ls"}).Analyze(strings.Repeat("ls ", maxCanonInput/3+10)); r.Verdict != Ask {
		t.Errorf("a command too long for bash: %s, want ask", r.Verdict)
	}
}

// TestANSICAsBash: the analyzer decodes $'..' exactly as bash does, for
// every kind of escape (bash's printing of the decoded word is compared
// with the analyzer's decoding).
func TestANSICAsBash(t *testing.T) {
	b := &BashParser{}
	for _, esc := range []string{`\x41\x4g`, `\x{2d}la`, `\x{73}udo`, `\x{1F600}x`, `s\x{0}x`, `\xz`, `\x`, `\cA\c?\ca\c\\z`,
		`\u00e9x`, `\u0073\U00000073`, `\uzz`, `\101\1012\0`, `\q\8\9`, `\e\E\a\b\f\n\r\t\v`, `\'\"\?\\`, `a\c`,
		`\777`, `\x7f\x80`, `\u0000x`, `\U0010FFFF`} {
		out, err := b.Canonical("echo $'" + esc + "'")
		if err != nil {
			t.Errorf("%s: %v", esc, err)
			continue
		}
		f, err := bashBody(out)
		if err != nil {
			// bash printed bytes that are not text: the command asks.
			if v := New(nil).Analyze("echo $'" + esc + "'").Verdict; v == Allow {
				t.Errorf("$'%s': bash prints %q, which the analyzer cannot read, and it allows the command", esc, out)
			}
			continue
		}
		call := f.Stmts[0].Cmd.(*syntax.CallExpr)
		bashValue := ""
		if len(call.Args) > 1 {
			bashValue = resolve(call.Args[1]).s
		}
		if got := ansiC(esc); got != bashValue {
			// A value bash prints in another quoting is still fine if
			// the analyzer sees the difference (it then asks).
			if New(nil).Analyze("echo $'"+esc+"'").Verdict == Allow {
				t.Errorf("$'%s': the analyzer decodes %q, bash %q, and allows it", esc, got, bashValue)
			}
		}
	}
}
