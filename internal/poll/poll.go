// Package poll waits the way a loop that polls must: a pause that ends
// early when the context does, and a check repeated until it holds, the
// context ends or a deadline passes. A loop that sleeps with time.Sleep
// outlives the request or the shutdown that should have ended it.
package poll

import (
	"context"
	"time"
)

// Sleep pauses for d, or until ctx ends (then it returns ctx's error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until calls check every interval until it reports done or fails, and
// returns its error; or ctx's error when ctx ends first.
func Until(ctx context.Context, every time.Duration, check func() (done bool, err error)) error {
	for {
		done, err := check()
		if done || err != nil {
			return err
		}
		if err := Sleep(ctx, every); err != nil {
			return err
		}
	}
}
