package durable

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// A failure is final for the workflow, unless it is the attempt's own
// context ending: a busy machine's lapsed heartbeat must not fail a
// session's provisioning for good.
func TestNonRetryable(t *testing.T) {
	for _, c := range []struct {
		err   error
		final bool
	}{
		{errors.New("no such model"), true},
		{fmt.Errorf("make the session's volume: %w", fmt.Errorf("mkfs.ext4: %w: ", context.Canceled)), false},
		{fmt.Errorf("clone: %w", context.DeadlineExceeded), false},
	} {
		var app *temporal.ApplicationError
		got := nonRetryable(c.err)
		if final := errors.As(got, &app) && app.NonRetryable(); final != c.final {
			t.Errorf("nonRetryable(%v): final %v, want %v", c.err, final, c.final)
		}
	}
}
