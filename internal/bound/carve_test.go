package bound

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func TestCarve(t *testing.T) {
	parent := Limits{Actions: 100, Active: time.Hour, Tokens: 1000, SpendUSD: 2, Grant: Grant{Actions: 50, Active: 30 * time.Minute}}
	used := Consumption{Actions: 40, Active: 20 * time.Minute, Tokens: 400, SpendUSD: 0.5}
	cases := []struct {
		name        string
		parent      Limits
		used        Consumption
		held, asked Limits
		want        Limits
		err         bool
	}{
		{name: "half of what is left", parent: parent, used: used,
			want: Limits{Actions: 30, Active: 20 * time.Minute, Tokens: 300, SpendUSD: 0.75}},
		{name: "a last action", parent: parent, used: Consumption{Actions: 99},
			want: Limits{Actions: 1, Active: 30 * time.Minute, Tokens: 500, SpendUSD: 1}},
		{name: "less than left", parent: parent, used: used, asked: Limits{Actions: 10, Active: time.Minute, Tokens: 5, SpendUSD: 0.1},
			want: Limits{Actions: 10, Active: time.Minute, Tokens: 5, SpendUSD: 0.1}},
		{name: "more than left is cut", parent: parent, used: used, asked: Limits{Actions: 1000, Active: 10 * time.Hour, Tokens: 1e6, SpendUSD: 100},
			want: Limits{Actions: 60, Active: 40 * time.Minute, Tokens: 600, SpendUSD: 1.5}},
		{name: "siblings hold their share", parent: parent, used: used, held: Limits{Actions: 30, Active: 30 * time.Minute, Tokens: 100, SpendUSD: 1},
			asked: Limits{Actions: 100, Active: time.Hour, Tokens: 1000, SpendUSD: 10},
			want:  Limits{Actions: 30, Active: 10 * time.Minute, Tokens: 500, SpendUSD: 0.5}},
		{name: "an extension granted counts", parent: parent, used: Consumption{Actions: 120, Extensions: 1},
			want: Limits{Actions: 15, Active: 45 * time.Minute, Tokens: 500, SpendUSD: 1}},
		{name: "unbounded stays as asked", parent: Limits{Actions: 10}, asked: Limits{Tokens: 7},
			want: Limits{Actions: 5, Tokens: 7}},
		{name: "nothing left", parent: parent, used: Consumption{Actions: 100}, err: true},
		{name: "held takes the rest", parent: parent, held: Limits{SpendUSD: 2}, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Carve(c.parent, c.used, c.held, c.asked)
			if c.err {
				if !errors.Is(err, ErrNothingLeft) {
					t.Fatalf("err = %v, want ErrNothingLeft", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestCarveNeverExceedsWhatIsLeft: over random budgets, a delegated
// budget never exceeds what the delegating session has left, and a chain
// of delegations never holds more than the first session had.
func TestCarveNeverExceedsWhatIsLeft(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		parent := Limits{Actions: r.IntN(200) + 1, Active: time.Duration(r.IntN(3600)+1) * time.Second, Tokens: int64(r.IntN(10000) + 1), SpendUSD: float64(r.IntN(500)+1) / 100}
		used := Consumption{Actions: r.IntN(250), Active: time.Duration(r.IntN(4000)) * time.Second, Tokens: int64(r.IntN(12000)), SpendUSD: float64(r.IntN(600)) / 100}
		held := Limits{Actions: r.IntN(50), Active: time.Duration(r.IntN(600)) * time.Second, Tokens: int64(r.IntN(2000)), SpendUSD: float64(r.IntN(100)) / 100}
		asked := Limits{Actions: r.IntN(300), Active: time.Duration(r.IntN(5000)) * time.Second, Tokens: int64(r.IntN(20000)), SpendUSD: float64(r.IntN(800)) / 100}
		child, err := Carve(parent, used, held, asked)
		if err != nil {
			continue
		}
		if child.Actions > parent.Actions-used.Actions-held.Actions || child.Active > parent.Active-used.Active-held.Active ||
			child.Tokens > parent.Tokens-used.Tokens-held.Tokens || child.SpendUSD > parent.SpendUSD-used.SpendUSD-held.SpendUSD+1e-9 {
			t.Fatalf("parent %+v used %+v held %+v asked %+v: child %+v exceeds what is left", parent, used, held, asked, child)
		}
		grand, err := Carve(child, Consumption{}, Limits{}, asked)
		if err == nil && (grand.Actions > child.Actions || grand.Active > child.Active || grand.Tokens > child.Tokens || grand.SpendUSD > child.SpendUSD) {
			t.Fatalf("grandchild %+v exceeds its parent %+v", grand, child)
		}
	}
}
