package policy

import (
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// ShellTool is the tool whose command is analyzed piece by piece.
const ShellTool = "run_command"

// Decision is the verdict for one tool call, with the rule that decided it
// and the policy version it was decided under.
type Decision struct {
	Verdict      shellcheck.Verdict `json:"verdict"`
	Rule         string             `json:"rule"`
	Reason       string             `json:"reason"`
	Pieces       []shellcheck.Piece `json:"pieces,omitempty"`
	PolicyDigest string             `json:"policyDigest"`
}

// Evaluate decides a tool call. A disabled tool is refused; a shell command
// is analyzed (refused pieces refuse whatever the tool's value; a command
// whose every piece is free needs no permission); other tools get the
// tool's value. An evaluation that cannot complete refuses. A policy
// with a Floor decides the stricter of its decision and its floor's (the
// rule then names the floor's, "floor:RULE").
func (p *Policy) Evaluate(tool string, args json.RawMessage) Decision {
	d := p.evaluate(tool, args)
	if p.Floor != nil {
		if f := p.Floor.Evaluate(tool, args); f.Verdict > d.Verdict {
			f.PolicyDigest = d.PolicyDigest
			f.Rule = "floor:" + f.Rule
			return f
		}
	}
	return d
}

// evaluate is Evaluate by this policy alone.
func (p *Policy) evaluate(tool string, args json.RawMessage) Decision {
	d := Decision{PolicyDigest: p.Digest()}
	v, rule := p.Tool(tool)
	if v == Disabled {
		d.Verdict, d.Rule, d.Reason = shellcheck.Refuse, rule, tool+" is disabled by policy"
		return d
	}
	if tool == ShellTool {
		var a struct {
			Command string `json:"command"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			d.Verdict, d.Rule, d.Reason = shellcheck.Refuse, "evaluation-failed", fmt.Sprintf("cannot read the command: %v", err)
			return d
		}
		r := shellcheck.New(p.Commands).Analyze(a.Command)
		d.Pieces = r.Pieces
		d.Verdict = r.Verdict
		for _, piece := range r.Pieces {
			if piece.Verdict == r.Verdict {
				d.Rule, d.Reason = "command:"+piece.Rule, piece.Reason
				break
			}
		}
		if r.Verdict == shellcheck.Allow {
			d.Rule, d.Reason = "commands.allow", "every piece of the command is free"
		}
		if r.Verdict == shellcheck.Allow && v == AllowedWithoutPermission {
			d.Rule = rule
		}
		return d
	}
	if v == AllowedWithoutPermission {
		d.Verdict, d.Rule, d.Reason = shellcheck.Allow, rule, tool+" is allowed without permission"
	} else {
		d.Verdict, d.Rule, d.Reason = shellcheck.Ask, rule, tool+" needs permission"
	}
	return d
}

// Harden combines a decision with a later evaluation of the same call: the
// result is never less restrictive than the first.
func Harden(first, later Decision) Decision {
	if later.Verdict > first.Verdict {
		return later
	}
	return first
}
