package bound

import (
	"errors"
	"fmt"
	"time"
)

// ErrNothingLeft: a session has no budget left to give a delegated one.
var ErrNothingLeft = errors.New("no budget left to delegate")

// Carve is the budget of a session delegated by another: what was asked
// (zero: all that is left), never more than what the delegating session
// has left of its own, once its consumption and what its other live
// delegations hold are taken off. A bound the delegating session does not
// have (zero) is the asked one. Turns are not carved (a delegated
// session's turns are not its delegating session's), nor extensions: a
// person extends the session that delegated.
func Carve(parent Limits, used Consumption, held Limits, asked Limits) (Limits, error) {
	e := parent.Effective(used.Extensions)
	out := Limits{Lifetime: parent.Lifetime}
	var err error
	pick := func(name string, limit, spent, holding, want float64) float64 {
		if limit <= 0 {
			return max(want, 0)
		}
		left := limit - spent - holding
		if left <= 0 {
			err = errors.Join(err, fmt.Errorf("%w: %s", ErrNothingLeft, name))
			return 0
		}
		if want <= 0 || want > left {
			return left
		}
		return want
	}
	out.Actions = int(pick("actions", float64(e.Actions), float64(used.Actions), float64(held.Actions), float64(asked.Actions)))
	out.Active = time.Duration(pick("active time", float64(e.Active), float64(used.Active), float64(held.Active), float64(asked.Active)))
	out.Tokens = int64(pick("tokens", float64(e.Tokens), float64(used.Tokens), float64(held.Tokens), float64(asked.Tokens)))
	out.SpendUSD = pick("spend", e.SpendUSD, used.SpendUSD, held.SpendUSD, asked.SpendUSD)
	return out, err
}

// Add is the sum of two budgets (what several delegations hold).
func (l Limits) Add(o Limits) Limits {
	l.Actions += o.Actions
	l.Active += o.Active
	l.Tokens += o.Tokens
	l.SpendUSD += o.SpendUSD
	return l
}
