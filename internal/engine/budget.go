package engine

import (
	"context"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/session"
)

// Consumption is what session x consumed of its budget so far.
func (s Gates) Consumption(ctx context.Context, x session.Session) (bound.Consumption, error) {
	return durable.ConsumptionOf(ctx, s.Store, x, s.Now())
}
