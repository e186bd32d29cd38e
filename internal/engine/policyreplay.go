package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// MaxReplaySessions bounds how many sessions (the newest) a replay reads.
const MaxReplaySessions = 1000

// recordedCalls returns the tool calls of a project's sessions created at
// or after since (all when since is zero), each with the verdict the gate
// recorded for it. Calls the gate never judged (unknown tools, malformed
// arguments, calls cut before the gate) are left out.
func (s *Service) recordedCalls(ctx context.Context, project string, since time.Time) ([]policy.Call, int, error) {
	if err := identity.CheckName(identity.ProjectName, project); err != nil {
		return nil, 0, err
	}
	sessions, err := s.Store.ListSessions(ctx, session.Filter{Project: project, IncludeArchived: true, Limit: MaxReplaySessions})
	if err != nil {
		return nil, 0, err
	}
	var calls []policy.Call
	n := 0
	for _, ss := range sessions {
		if !since.IsZero() && ss.CreatedAt.Before(since) {
			continue
		}
		n++
		byID := map[string]*policy.Call{}
		judged := map[string]bool{}
		var order []string
		for after := int64(0); ; {
			evs, err := s.Store.ListEvents(ctx, ss.ID, after, 0)
			if err != nil {
				return nil, 0, err
			}
			for _, e := range evs {
				after = e.Seq
				if e.Kind != session.EventToolCall {
					continue
				}
				var d session.ToolCallData
				if json.Unmarshal(e.Data, &d) != nil || d.ID == "" {
					continue
				}
				c := byID[d.ID]
				if c == nil {
					c = &policy.Call{Session: ss.ID, ID: d.ID, Tool: d.Name, At: e.CreatedAt}
					byID[d.ID] = c
					order = append(order, d.ID)
				}
				if len(c.Args) == 0 && len(d.Args) > 0 {
					c.Args = d.Args
				}
				if d.Verdict != "" && !judged[d.ID] {
					v, err := shellcheck.ParseVerdict(d.Verdict)
					if err != nil {
						return nil, 0, fmt.Errorf("session %s call %s: %w", ss.ID, d.ID, err)
					}
					c.Before, c.BeforeRule, judged[d.ID] = v, d.Rule, true
				}
			}
			if len(evs) == 0 {
				break
			}
		}
		for _, id := range order {
			if judged[id] && len(byID[id].Args) > 0 {
				calls = append(calls, *byID[id])
			}
		}
	}
	return calls, n, nil
}

// ReplayPolicy judges a project's recorded tool calls under a policy
// written in YAML (as the project's policy, before any agent's own
// tightening) and reports what would change.
func (s Projects) ReplayPolicy(ctx context.Context, caller identity.Principal, project string, yamlText []byte, since time.Time, examples int) (policy.ReplayReport, error) {
	if err := s.Access.Allow(ctx, caller, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return policy.ReplayReport{}, err
	}
	if err := s.Projects().Check(ctx, project); err != nil {
		return policy.ReplayReport{}, err
	}
	if policy.Empty(yamlText) {
		return policy.ReplayReport{}, fmt.Errorf("%w: empty policy: send the policy YAML to replay (e.g. `default: ask`)", errdefs.ErrInvalid)
	}
	p, err := policy.Parse(yamlText)
	if err != nil {
		return policy.ReplayReport{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	calls, n, err := s.recordedCalls(ctx, project, since)
	if err != nil {
		return policy.ReplayReport{}, err
	}
	r := p.Replay(calls, examples)
	r.Sessions = n
	return r, nil
}
