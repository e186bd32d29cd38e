package workflows

import "testing"

// The local activities are run by the names Temporal registered.
func TestActivityName(t *testing.T) {
	for want, fn := range map[string]any{"Claim": life.Claim, "OpenTurn": turns.OpenTurn, "CheckBudget": budgets.CheckBudget, "SettleTurn": turns.SettleTurn} {
		if got := activityName(fn); got != want {
			t.Errorf("activityName = %q, want %q", got, fn)
		}
	}
}
