// Package throttle slows down guessing: failed attempts (of a token, a
// login) are counted per source, and a source that fails too often is
// refused for a while before its attempt is even checked.
package throttle

import (
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failures counts failed attempts per source (a client's address): each
// source may fail Burst times at once, then once per Every. Safe for
// concurrent use; at most MaxSources are tracked (the quietest are
// forgotten first).
type Failures struct {
	Every      time.Duration
	Burst      int
	MaxSources int
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	sources map[string]*source
}

type source struct {
	lim      *rate.Limiter
	last     time.Time // of the last failure
	reported time.Time // when a failure was last reported
	quiet    int       // failures not reported since
}

// Defaults: 20 failures at once, then one every 3 seconds, per source;
// 10,000 sources.
const (
	DefaultEvery      = 3 * time.Second
	DefaultBurst      = 20
	DefaultMaxSources = 10_000
)

func (f *Failures) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Failures) get(key string) *source {
	if f.sources == nil {
		f.sources = map[string]*source{}
	}
	s := f.sources[key]
	if s == nil {
		limit := f.MaxSources
		if limit <= 0 {
			limit = DefaultMaxSources
		}
		if len(f.sources) >= limit {
			f.forget()
		}
		every, burst := f.Every, f.Burst
		if every <= 0 {
			every = DefaultEvery
		}
		if burst <= 0 {
			burst = DefaultBurst
		}
		s = &source{lim: rate.NewLimiter(rate.Every(every), burst)}
		f.sources[key] = s
	}
	return s
}

// forget drops the sources whose last failure is oldest (a tenth of
// them), so one who floods with new addresses cannot grow the map.
func (f *Failures) forget() {
	keys := slices.Collect(maps.Keys(f.sources))
	slices.SortFunc(keys, func(a, b string) int { return f.sources[a].last.Compare(f.sources[b].last) })
	for _, k := range keys[:max(len(keys)/10, 1)] {
		delete(f.sources, k)
	}
}

// Allowed says whether key may attempt now, and if not, how long until it
// may: a source that spent its failures waits.
func (f *Failures) Allowed(key string) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sources[key]
	if !ok {
		return true, 0
	}
	now := f.now()
	if s.lim.TokensAt(now) >= 1 {
		return true, 0
	}
	r := s.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}

// Fail counts a failed attempt of key. It says whether to report it, and
// how many failures went unreported before it: the first failure of a
// source is reported, then at most one a minute, so a flood of guesses is
// a line a minute, not a line a guess.
func (f *Failures) Fail(key string) (report bool, unreported int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.get(key)
	now := f.now()
	s.lim.AllowN(now, 1)
	s.last = now
	if now.Sub(s.reported) < time.Minute {
		s.quiet++
		return false, 0
	}
	unreported, s.quiet, s.reported = s.quiet, 0, now
	return true, unreported
}
