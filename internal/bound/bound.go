// Package bound holds the rules that bound a session, pure, with no
// clock or store of its own: its budgets (actions, active time,
// extensions, tokens, turns, spend, lifetime), what an extension grants,
// the reasons a session parks and how long a park may last, and the
// debounce window of trigger deliveries. The workflow and the activities
// ask it; they record consumption, it decides.
package bound

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of a session's budget.
const (
	DefaultActions    = 150
	DefaultActive     = 45 * time.Minute
	DefaultExtensions = 5
	DefaultLifetime   = 7 * 24 * time.Hour
	DefaultWatchdog   = 5 * time.Minute
)

// Grant is what one extension adds.
type Grant struct {
	Actions int
	Active  time.Duration
}

// DefaultGrant is what one extension adds unless configured.
var DefaultGrant = Grant{Actions: 50, Active: 15 * time.Minute}

// Limits are a session's budgets; a zero Tokens, Turns, SpendUSD or
// Lifetime is no bound.
type Limits struct {
	Actions    int
	Active     time.Duration
	Extensions int
	Grant      Grant
	Tokens     int64
	Turns      int
	SpendUSD   float64
	Lifetime   time.Duration
}

// Consumption is what a session used, as recorded: a restart restores it,
// never a fresh budget.
type Consumption struct {
	Actions    int
	Active     time.Duration
	Extensions int
	Tokens     int64
	Turns      int
	SpendUSD   float64
	// Age is the wall-clock time since the session was created.
	Age time.Duration
}

// Budget names one bound.
type Budget string

// Budgets.
const (
	Actions  Budget = "actions"
	Active   Budget = "active_minutes"
	Tokens   Budget = "tokens"
	Turns    Budget = "turns"
	Spend    Budget = "spend"
	Lifetime Budget = "lifetime"
)

// Overrun is a spent budget and what follows from it.
type Overrun struct {
	Budget Budget `json:"budget"`
	// Message says what was used of what, for people and the model.
	Message string `json:"message"`
	// Park is the reason to park for, when a person can lift the bound:
	// an extension (actions or active time, extensions left, interactive)
	// or a raised spend cap. Empty: the session stops cleanly.
	Park Reason `json:"park,omitempty"`
}

// Effective is l after n extensions.
func (l Limits) Effective(n int) Limits {
	l.Actions += n * l.Grant.Actions
	l.Active += time.Duration(n) * l.Grant.Active
	return l
}

// Check says which budget c has spent under l, if any: asked before each
// model call. interactive says whether a person can grant an extension.
func Check(l Limits, c Consumption, interactive bool) *Overrun {
	e := l.Effective(c.Extensions)
	extend := Reason("")
	if interactive && c.Extensions < l.Extensions {
		extend = AwaitingExtension
	}
	switch {
	case l.Lifetime > 0 && c.Age >= l.Lifetime:
		return &Overrun{Budget: Lifetime, Message: fmt.Sprintf("the session reached its lifetime of %s", l.Lifetime)}
	case l.SpendUSD > 0 && c.SpendUSD >= l.SpendUSD:
		park := Reason("")
		if interactive {
			park = BillingSpendCapExceeded
		}
		return &Overrun{Budget: Spend, Message: fmt.Sprintf("spent $%.4f of its $%.2f cap", c.SpendUSD, l.SpendUSD), Park: park}
	case l.Tokens > 0 && c.Tokens >= l.Tokens:
		return &Overrun{Budget: Tokens, Message: fmt.Sprintf("used %d of %d tokens", c.Tokens, l.Tokens)}
	case l.Turns > 0 && c.Turns > l.Turns:
		return &Overrun{Budget: Turns, Message: fmt.Sprintf("ran %d of %d turns", c.Turns-1, l.Turns)}
	case e.Actions > 0 && c.Actions >= e.Actions:
		return &Overrun{Budget: Actions, Message: fmt.Sprintf("used %d of %d actions", c.Actions, e.Actions), Park: extend}
	case e.Active > 0 && c.Active >= e.Active:
		return &Overrun{Budget: Active, Message: fmt.Sprintf("was active %s of %s", round(c.Active), e.Active), Park: extend}
	}
	return nil
}

// Summary says what was consumed and what the next extension grants.
func Summary(l Limits, c Consumption) string {
	e := l.Effective(c.Extensions)
	parts := []string{fmt.Sprintf("%d of %d actions", c.Actions, e.Actions), fmt.Sprintf("%s of %s active", round(c.Active), e.Active),
		fmt.Sprintf("%d of %d extensions", c.Extensions, l.Extensions)}
	if l.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", c.Tokens, l.Tokens))
	}
	if l.SpendUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f of $%.2f", c.SpendUSD, l.SpendUSD))
	}
	s := "consumed " + strings.Join(parts, ", ")
	if c.Extensions < l.Extensions {
		s += fmt.Sprintf("; the next extension grants %d more actions and %s more active time", l.Grant.Actions, l.Grant.Active)
	} else {
		s += "; no extension is left"
	}
	return s
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// Reason is why a session is parked: waiting on a person or a condition,
// holding no process and no sandbox.
type Reason string

// Park reasons.
const (
	AwaitingApproval             Reason = "awaiting_approval"
	AwaitingAnswer               Reason = "awaiting_answer"
	AwaitingExtension            Reason = "awaiting_extension"
	AwaitingCredentials          Reason = "awaiting_credentials"
	AwaitingIdentity             Reason = "awaiting_identity"
	AwaitingStartApproval        Reason = "awaiting_start_approval"
	BillingInsufficientCredits   Reason = "billing_insufficient_credits"
	BillingSpendingLimitExceeded Reason = "billing_spending_limit_exceeded"
	BillingSpendCapExceeded      Reason = "billing_spend_cap_exceeded"
	ProviderOutage               Reason = "provider_outage"
)

// Reasons lists every park reason.
var Reasons = []Reason{AwaitingApproval, AwaitingAnswer, AwaitingExtension, AwaitingCredentials, AwaitingIdentity,
	AwaitingStartApproval, BillingInsufficientCredits, BillingSpendingLimitExceeded, BillingSpendCapExceeded, ProviderOutage}

// TTL bounds how long a park of reason r may last before it resolves
// expired and ends the session; 0 is until resolved (the session's
// lifetime still bounds it).
func TTL(r Reason) time.Duration {
	switch r {
	case BillingInsufficientCredits, BillingSpendingLimitExceeded:
		return 7 * 24 * time.Hour
	case ProviderOutage:
		return 6 * time.Hour
	}
	return 0
}

// Reprobe is how often a park of reason r checks on its own whether its
// condition cleared; 0 is never (a person or an event resolves it).
func Reprobe(r Reason) time.Duration {
	if r == ProviderOutage {
		return 5 * time.Minute
	}
	return 0
}

// Needs says what a session parked for r needs, and the command that
// gives it (ID is the session's).
func Needs(r Reason, id string) string {
	switch r {
	case AwaitingExtension:
		return "an extension of its budget: paddock sessions extend " + id
	case BillingSpendCapExceeded:
		return "a higher spend cap: paddock sessions extend " + id + " --spend-cap USD"
	case BillingInsufficientCredits, BillingSpendingLimitExceeded:
		return "credits on the provider's account, then: paddock sessions unpark " + id
	case ProviderOutage:
		return "the model provider back (probed every 5 minutes), or: paddock sessions unpark " + id
	case AwaitingApproval:
		return "a decision: paddock approvals ls"
	case AwaitingAnswer:
		return "an answer: paddock sessions logs " + id
	case AwaitingCredentials:
		return "the requester's credentials: paddock sessions credentials " + id + " (the requester runs it)"
	case AwaitingIdentity:
		return "the requester's choice of identity: paddock sessions identity " + id + " --as requester|service"
	case AwaitingStartApproval:
		return "a member's approval to start: paddock sessions approve-start " + id + " (or --reject)"
	}
	return "a person: paddock sessions get " + id
}

// Debounce windows of trigger deliveries held for a live session: they
// flush as one command once DebounceOldest has passed since the oldest
// held delivery, or DebounceNewest since the newest, whichever is first.
const (
	DebounceOldest = 5 * time.Second
	DebounceNewest = 2500 * time.Millisecond
)

// FlushAt is when held deliveries, the oldest and newest received at
// those times, flush.
func FlushAt(oldest, newest time.Time) time.Time {
	a, b := oldest.Add(DebounceOldest), newest.Add(DebounceNewest)
	if a.Before(b) {
		return a
	}
	return b
}
