package bound

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var defaults = Limits{Actions: DefaultActions, Active: DefaultActive, Extensions: DefaultExtensions, Grant: DefaultGrant, Lifetime: DefaultLifetime}

func TestCheck(t *testing.T) {
	withCap := defaults
	withCap.SpendUSD, withCap.Tokens, withCap.Turns = 2, 1000, 3
	cases := []struct {
		name        string
		l           Limits
		c           Consumption
		interactive bool
		want        Budget
		park        Reason
	}{
		{"fresh", defaults, Consumption{}, true, "", ""},
		{"one action left", defaults, Consumption{Actions: 149}, true, "", ""},
		{"actions spent, interactive: park for an extension", defaults, Consumption{Actions: 150}, true, Actions, AwaitingExtension},
		{"actions spent, non-interactive: stop", defaults, Consumption{Actions: 150}, false, Actions, ""},
		{"an extension granted lifts actions by 50", defaults, Consumption{Actions: 150, Extensions: 1}, true, "", ""},
		{"and is spent again", defaults, Consumption{Actions: 200, Extensions: 1}, true, Actions, AwaitingExtension},
		{"extensions exhausted: stop", defaults, Consumption{Actions: 400, Extensions: 5}, true, Actions, ""},
		{"active time spent", defaults, Consumption{Active: 45 * time.Minute}, true, Active, AwaitingExtension},
		{"active time extended by 15m", defaults, Consumption{Active: 50 * time.Minute, Extensions: 1}, true, "", ""},
		{"lifetime: stop, even with extensions left", defaults, Consumption{Age: 7 * 24 * time.Hour}, true, Lifetime, ""},
		{"spend cap, interactive: park until raised", withCap, Consumption{SpendUSD: 2}, true, Spend, BillingSpendCapExceeded},
		{"spend cap, non-interactive: stop", withCap, Consumption{SpendUSD: 2.5}, false, Spend, ""},
		{"tokens", withCap, Consumption{Tokens: 1000}, true, Tokens, ""},
		{"the third turn runs", withCap, Consumption{Turns: 3}, true, "", ""},
		{"the fourth does not", withCap, Consumption{Turns: 4}, true, Turns, ""},
		{"no bound where zero", Limits{}, Consumption{Actions: 1 << 30, Active: 1 << 62, Tokens: 1 << 60, Turns: 1 << 30, SpendUSD: 1e9, Age: 1 << 62}, true, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Check(c.l, c.c, c.interactive)
			if c.want == "" {
				require.Nil(t, o)
				return
			}
			require.NotNil(t, o)
			require.Equal(t, c.want, o.Budget)
			require.Equal(t, c.park, o.Park)
			require.NotEmpty(t, o.Message)
		})
	}
}

func TestSummary(t *testing.T) {
	s := Summary(defaults, Consumption{Actions: 150, Active: 12*time.Minute + 400*time.Millisecond, Extensions: 0})
	require.Equal(t, "consumed 150 of 150 actions, 12m0s of 45m0s active, 0 of 5 extensions; the next extension grants 50 more actions and 15m0s more active time", s)
	require.Contains(t, Summary(defaults, Consumption{Extensions: 5}), "no extension is left")
}

func TestParkRules(t *testing.T) {
	require.Equal(t, 7*24*time.Hour, TTL(BillingInsufficientCredits))
	require.Equal(t, 7*24*time.Hour, TTL(BillingSpendingLimitExceeded))
	require.Equal(t, 6*time.Hour, TTL(ProviderOutage))
	require.Zero(t, TTL(BillingSpendCapExceeded))
	require.Zero(t, TTL(AwaitingExtension))
	require.Equal(t, 5*time.Minute, Reprobe(ProviderOutage))
	require.Zero(t, Reprobe(AwaitingExtension))
	for _, r := range Reasons {
		require.NotEmpty(t, Needs(r, "S"), r)
	}
	require.Contains(t, Needs(AwaitingExtension, "S"), "paddock sessions extend S")
}

func TestFlushAt(t *testing.T) {
	t0 := time.Unix(0, 0)
	cases := []struct {
		oldest, newest time.Duration
		want           time.Duration
	}{
		{0, 0, 2500 * time.Millisecond},               // one delivery: 2.5 s after it
		{0, 2 * time.Second, 4500 * time.Millisecond}, // the newest decides
		{0, 4 * time.Second, 5 * time.Second},         // the oldest caps the wait
		{0, 10 * time.Second, 5 * time.Second},        // (a burst never waits past 5 s)
		{time.Second, 1500 * time.Millisecond, 4 * time.Second},
	}
	for _, c := range cases {
		require.Equal(t, t0.Add(c.want), FlushAt(t0.Add(c.oldest), t0.Add(c.newest)), "%v", c)
	}
}
