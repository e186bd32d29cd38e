package throttle

import (
	"fmt"
	"testing"
	"time"
)

func TestFailures(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &Failures{Every: time.Second, Burst: 3, MaxSources: 10, Now: func() time.Time { return now }}
	reports := 0
	for i := range 3 {
		if ok, _ := f.Allowed("a"); !ok {
			t.Fatalf("failure %d refused within the burst", i)
		}
		if r, _ := f.Fail("a"); r {
			reports++
		}
	}
	ok, wait := f.Allowed("a")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("after the burst: allowed=%v wait=%v", ok, wait)
	}
	if ok, _ := f.Allowed("b"); !ok {
		t.Fatal("another source is held back by a's failures")
	}
	now = now.Add(time.Second)
	if ok, _ := f.Allowed("a"); !ok {
		t.Fatal("a second later, one more attempt is allowed")
	}
	if reports != 1 {
		t.Fatalf("%d reports for a burst within a minute, want 1", reports)
	}
	now = now.Add(time.Minute)
	r, unreported := f.Fail("a")
	if !r || unreported != 2 {
		t.Fatalf("a minute later: report=%v unreported=%d, want true 2", r, unreported)
	}
	// Many sources: the map stays bounded, the oldest go first.
	for i := range 100 {
		now = now.Add(time.Millisecond)
		f.Fail(fmt.Sprint("src", i))
	}
	if len(f.sources) > 10 {
		t.Fatalf("%d sources kept, want at most 10", len(f.sources))
	}
	if _, kept := f.sources["src99"]; !kept {
		t.Fatal("the newest source was forgotten")
	}
}
