package terminal

import (
	"fmt"
	"io"
	"strings"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// FreeExplained is what a free command may do, and the options that keep
// it free.
type FreeExplained struct {
	Command string   `json:"command"`
	Does    string   `json:"does"`
	Options []string `json:"options,omitempty"`
	Known   bool     `json:"known"`
}

// ExplainJSON explains each free command once.
func ExplainJSON(entries []string) []FreeExplained {
	var out []FreeExplained
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e] {
			continue
		}
		seen[e] = true
		does, opts, known := shellcheck.Explain(e)
		out = append(out, FreeExplained{e, does, opts, known})
	}
	return out
}

// ExplainFree prints what each free command may do and which options keep
// it free.
func ExplainFree(w io.Writer, entries []string) {
	for _, f := range ExplainJSON(entries) {
		fmt.Fprintf(w, "\nfree: %s — %s\n", f.Command, f.Does)
		if len(f.Options) > 0 {
			fmt.Fprintf(w, "  options that keep it free: %s\n", strings.Join(f.Options, " "))
		}
	}
}

// PrintReplay prints a policy replay's report: what would change, per
// transition and per rule, with examples.
func PrintReplay(w io.Writer, file, project, since string, rep policy.ReplayReport) {
	window := "all sessions"
	if since != "" {
		window = "sessions since " + since
	}
	fmt.Fprintf(w, "%s (%s) on project %s, %s: %d calls in %d sessions, %d would change, %d unchanged\n",
		file, rep.PolicyDigest, project, window, rep.Calls, rep.Sessions, len(rep.Changed), rep.Unchanged)
	if len(rep.Changed) == 0 {
		return
	}
	fmt.Fprintln(w, "\nchanges:")
	for _, t := range []string{"allow→ask", "allow→refuse", "ask→refuse", "refuse→ask", "refuse→allow", "ask→allow"} {
		if n := rep.Transitions[t]; n > 0 {
			fmt.Fprintf(w, "  %-13s %d\n", t, n)
		}
	}
	fmt.Fprintln(w, "\nby rule:")
	for _, r := range rep.Rules {
		fmt.Fprintf(w, "  %-40s %-13s %d\n", r.Rule, policy.Transition(r.From, r.To), r.Count)
		for _, ex := range r.Examples {
			what := ex.Tool
			if ex.Command != "" {
				what += ": " + ex.Command
			}
			fmt.Fprintf(w, "      %s/%s  %s\n", ex.Session, ex.ID, OneLine(what, 120))
		}
	}
}
