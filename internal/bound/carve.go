package bound

import (
	"errors"
	"fmt"
	"time"
)

// ErrNothingLeft: a session has no budget left to give a delegated one.
var ErrNothingLeft = errors.New("no budget left to delegate")

// Carve is the budget of a session delegated by another: what was asked,
// never more than what the delegating session has left of its own, once
// its consumption and what its other live delegations hold are taken
// off; a bound not asked is half of what is left (the delegating session
// keeps the rest for itself and its other delegations). A bound the delegating session does not
// have (zero) is the asked one. Turns are not carved (a delegated
// session's turns are not its delegating session's), nor extensions: a
// person extends the session that delegated.
func Carve(parent Limits, used Consumption, held Limits, asked Limits) (Limits, error) {
	e := parent.Effective(used.Extensions)
	out := Limits{Lifetime: parent.Lifetime}
	var err error
	pick := func(name string, limit, spent, holding, want, unit float64) float64 {
		if limit <= 0 {
			return max(want, 0)
		}
		left := limit - spent - holding
		if left <= 0 {
			err = errors.Join(err, fmt.Errorf("%w: %s", ErrNothingLeft, name))
			return 0
		}
		switch {
		case want > left:
			return left
		case want <= 0:
			return max(left/2, min(left, unit)) // a last action is not halved away
		}
		return want
	}
	out.Actions = int(pick("actions", float64(e.Actions), float64(used.Actions), float64(held.Actions), float64(asked.Actions), 1))
	out.Active = time.Duration(pick("active time", float64(e.Active), float64(used.Active), float64(held.Active), float64(asked.Active), 0))
	out.Tokens = int64(pick("tokens", float64(e.Tokens), float64(used.Tokens), float64(held.Tokens), float64(asked.Tokens), 1))
	out.SpendUSD = pick("spend", e.SpendUSD, used.SpendUSD, held.SpendUSD, asked.SpendUSD, 0)
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
