package shellcheck

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// typical are commands of the kind agents send all day.
var typical = []string{
	`ls -la internal/`,
	`git status --short`,
	`sed -n '10,40p' main.go`,
	`grep -rn "func main" --include=*.go . | head -20`,
	`go test -run TestX -v ./internal/api`,
	`git log --oneline -20`,
	`find . -name '*.go' | xargs grep -l TODO`,
	`cd internal && ls && cat doc.go`,
	`awk '{print $1}' main.go | sort | uniq -c | sort -rn`,
	`git diff HEAD~1 --stat`,
}

// benchAnalyze reports the median time of one analysis (p50-ns) beside
// the mean, over the typical commands.
func benchAnalyze(b *testing.B, a func(i int) *Analyzer) {
	d := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		a(i).Analyze(typical[i%len(typical)])
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	if len(d) > 0 {
		b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
	}
}

// BenchmarkAnalyzePure: the analyzer's own reading and judgment only.
//
//	go test ./internal/shellcheck -run '^$' -bench Analyze -count 5
func BenchmarkAnalyzePure(b *testing.B) {
	a := New(DefaultFree).WithBash(nil)
	benchAnalyze(b, func(int) *Analyzer { return a })
}

// BenchmarkAnalyzeBash: end to end with bash's reading, a command bash
// has not read before (a fresh bash each time).
func BenchmarkAnalyzeBash(b *testing.B) {
	base := New(DefaultFree)
	benchAnalyze(b, func(int) *Analyzer { return base.WithBash(&BashParser{}) })
}

// BenchmarkAnalyzeBashCached: end to end when bash has read the command
// before (an approval re-evaluated at execution, a replay, the web page).
func BenchmarkAnalyzeBashCached(b *testing.B) {
	a := New(DefaultFree).WithBash(&BashParser{})
	for _, c := range typical {
		a.Analyze(c)
	}
	benchAnalyze(b, func(int) *Analyzer { return a })
}

// TestTypicalAllowed keeps the benchmarks honest: their commands are the
// everyday kind, all free.
func TestTypicalAllowed(t *testing.T) {
	a := New(DefaultFree)
	for i, c := range typical {
		if r := a.Analyze(c); r.Verdict != Allow {
			t.Errorf("typical[%s] %q: %s", strconv.Itoa(i), c, r.Verdict)
		}
	}
}
