package engine

import (
	"context"
	"encoding/json"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/spec"
)

// BudgetUse is what a session consumed of its budget, and the budget
// (after the extensions granted).
type BudgetUse struct {
	Used   bound.Consumption
	Limits bound.Limits
}

// Budget is what session id consumed of its budget so far, and the
// budget, for a caller who may read it.
func (s Gates) Budget(ctx context.Context, p identity.Principal, id string) (BudgetUse, error) {
	x, err := s.Sessions().Get(ctx, p, id)
	if err != nil {
		return BudgetUse{}, err
	}
	c, err := durable.ConsumptionOf(ctx, s.Store, x, s.now())
	if err != nil {
		return BudgetUse{}, err
	}
	var sp spec.Agent
	_ = json.Unmarshal(x.AgentSpec, &sp) // a spec that does not read has the defaults
	return BudgetUse{Used: c, Limits: sp.Session.Limits(s.Defaults, x.SpendCapUSD).Effective(c.Extensions)}, nil
}
