package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// Call is a recorded tool call: its arguments and the verdict the gate
// gave it when it ran.
type Call struct {
	Session    string             `json:"session"`
	ID         string             `json:"id"`
	Tool       string             `json:"tool"`
	Args       json.RawMessage    `json:"args,omitempty"`
	At         time.Time          `json:"at"`
	Before     shellcheck.Verdict `json:"before"`
	BeforeRule string             `json:"beforeRule,omitempty"`
}

// Change is a call the new policy judges differently.
type Change struct {
	Call
	After     shellcheck.Verdict `json:"after"`
	AfterRule string             `json:"afterRule"`
	Reason    string             `json:"reason"`
	// Command is the shell command of a run_command call.
	Command string `json:"command,omitempty"`
}

// RuleChanges counts the changes one rule of the new policy makes, from
// one verdict to another, with a few examples.
type RuleChanges struct {
	Rule     string             `json:"rule"`
	From     shellcheck.Verdict `json:"from"`
	To       shellcheck.Verdict `json:"to"`
	Count    int                `json:"count"`
	Examples []Change           `json:"examples"`
}

// ReplayReport is what a policy would change in recorded calls.
type ReplayReport struct {
	PolicyDigest string `json:"policyDigest"`
	Sessions     int    `json:"sessions"`
	Calls        int    `json:"calls"`
	Unchanged    int    `json:"unchanged"`
	// Transitions counts changes by "allow→ask", "ask→refuse", ...
	Transitions map[string]int `json:"transitions"`
	// Rules are the changes per rule, most frequent first.
	Rules []RuleChanges `json:"rules"`
	// Changed lists every changed call, oldest first.
	Changed []Change `json:"changed"`
}

// Transition names a change of verdict: "allow→ask".
func Transition(from, to shellcheck.Verdict) string { return from.String() + "→" + to.String() }

// Replay judges recorded calls under p and reports every call whose verdict
// would differ from the one recorded, counted per transition and per rule
// of p, with up to examples examples per rule.
func (p *Policy) Replay(calls []Call, examples int) ReplayReport {
	r := ReplayReport{PolicyDigest: p.Digest(), Calls: len(calls), Transitions: map[string]int{}, Changed: []Change{}, Rules: []RuleChanges{}}
	sessions := map[string]bool{}
	type key struct {
		rule     string
		from, to shellcheck.Verdict
	}
	byRule := map[key]*RuleChanges{}
	sorted := append([]Call(nil), calls...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	for _, c := range sorted {
		sessions[c.Session] = true
		d := p.Evaluate(c.Tool, c.Args)
		if d.Verdict == c.Before {
			r.Unchanged++
			continue
		}
		ch := Change{Call: c, After: d.Verdict, AfterRule: d.Rule, Reason: d.Reason}
		if c.Tool == ShellTool {
			var a struct {
				Command string `json:"command"`
			}
			_ = json.Unmarshal(c.Args, &a)
			ch.Command = a.Command
		}
		r.Changed = append(r.Changed, ch)
		r.Transitions[Transition(c.Before, d.Verdict)]++
		k := key{d.Rule, c.Before, d.Verdict}
		rc := byRule[k]
		if rc == nil {
			rc = &RuleChanges{Rule: d.Rule, From: c.Before, To: d.Verdict, Examples: []Change{}}
			byRule[k] = rc
		}
		rc.Count++
		if len(rc.Examples) < examples {
			rc.Examples = append(rc.Examples, ch)
		}
	}
	r.Sessions = len(sessions)
	for _, rc := range byRule {
		r.Rules = append(r.Rules, *rc)
	}
	sort.Slice(r.Rules, func(i, j int) bool {
		a, b := r.Rules[i], r.Rules[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return Transition(a.From, a.To) < Transition(b.From, b.To)
	})
	return r
}

// maxDays is the most days a time.Duration holds (about 292 years).
const maxDays = int(math.MaxInt64 / int64(24*time.Hour))

// ParseSince reads how far back a replay looks: a duration such as 7d, 12h
// or 90m (days are 24 hours), or an RFC 3339 time or date. Empty is zero
// (everything).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 && days <= maxDays {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("since: %q is not a duration (7d, 12h, 30m) or a date (2006-01-02)", s)
}
