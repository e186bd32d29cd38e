package shellcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// refusedWords are programs whose appearance as a command word anywhere in
// a command must make the verdict refuse.
var refusedWords = set("sudo", "su", "doas", "eval", "exec", "insmod", "modprobe", "rmmod", "iptables", "nft", "ufw", "mkfs", "pkexec")

// commandWords lists, independently of the checker, every literal command
// word in the parsed command: anywhere in the tree, including function
// bodies, substitutions and here-documents.
func commandWords(src string) ([]string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, false
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			if lit := call.Args[0].Lit(); lit != "" {
				out = append(out, lit)
			}
		}
		return true
	})
	return out, true
}

func FuzzAnalyze(f *testing.F) {
	for _, file := range []string{"testdata/corpus-sample.tsv", "testdata/corpus-hard.tsv"} {
		for _, c := range readCorpus(f, file) {
			f.Add(c.command)
		}
	}
	a := New(corpusFree)
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		done := make(chan string, 1)
		go func() { done <- check(a, src) }()
		select {
		case msg := <-done:
			if msg != "" {
				t.Fatal(msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: analysis took over 10s", src)
		}
	})
}

// check returns what is wrong with the analysis of src, or "".
func check(a *Analyzer, src string) string {
	r := a.Analyze(src) // must not panic
	if len(r.Pieces) == 0 {
		return fmt.Sprintf("%q: no explanation", src)
	}
	words, ok := commandWords(src)
	if !ok {
		if r.Verdict == Allow {
			return fmt.Sprintf("%q: unparsable but allowed", src)
		}
		return ""
	}
	for _, w := range words {
		if refusedWords[w] && r.Verdict != Refuse {
			return fmt.Sprintf("%q: %s is a command word but the verdict is %s", src, w, r.Verdict)
		}
	}
	// Whatever comes before, a refused program after a newline is refused
	// unless it became part of a string, a comment or a here-document.
	tail := src + "\nsudo id"
	if tw, ok := commandWords(tail); ok {
		for _, w := range tw {
			if w == "sudo" && a.Analyze(tail).Verdict != Refuse {
				return fmt.Sprintf("%q: sudo as a command word is not refused", tail)
			}
		}
	}
	return ""
}
