package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// retryMax is the longest wait between two fetches from a forge that
// does not answer (the first is a second, then each twice the last).
const retryMax = time.Minute

// Patiently runs fetch until it does not fail with ErrUnreachable, or
// limit has passed since the first try (its error then says so), or ctx
// ends; the last wait ends at the limit. waiting is told the first time
// the forge does not answer (its error ends the wait, as it is).
func Patiently(ctx context.Context, limit time.Duration, now func() time.Time, waiting func(error) error, fetch func() (string, error)) (string, error) {
	start := now()
	got, err := fetch()
	for wait := time.Second; errors.Is(err, ErrUnreachable); wait = min(2*wait, retryMax) {
		if now().Sub(start) >= limit {
			return "", fmt.Errorf("%w; it did not answer for %s", err, limit)
		}
		if wait == time.Second {
			if err := waiting(err); err != nil {
				return "", err
			}
		}
		t := time.NewTimer(min(wait, limit-now().Sub(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
		got, err = fetch()
	}
	return got, err
}
