package copies

import (
	"context"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/stretchr/testify/require"
)

// TestHostReadsWaitForTheSandbox: while a session's sandboxed process
// runs, the host does not read its copy (a diff waits, then is a 409);
// other sessions are not held up; once it ends, the read goes ahead.
func TestHostReadsWaitForTheSandbox(t *testing.T) {
	ctx := context.Background()
	c := &Set{}
	release, err := c.Sandboxed(ctx, "s1")
	require.NoError(t, err)
	_, err = c.Quiet(ctx, "s1", 50*time.Millisecond)
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorIs(t, err, errdefs.ErrConflict)
	other, err := c.Quiet(ctx, "s2", 50*time.Millisecond)
	require.NoError(t, err)
	other()
	done := make(chan error, 1)
	go func() {
		r, err := c.Quiet(ctx, "s1", time.Minute)
		if err == nil {
			r()
		}
		done <- err
	}()
	release()
	require.NoError(t, <-done)
}
