package attachdesk

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/errdefs"
)

// TestRedactionTurns: one person has one text file looked at at a time
// (a second is refused at once, whoever else waits); while someone's
// file holds a turn, another person's is looked at in the turn left; when
// every turn is held, a file waits, then is refused with the reason.
func TestRedactionTurns(t *testing.T) {
	s := &Service{}
	ctx := context.Background()
	out, rules, err := s.redact(ctx, "operator:ann", "a.txt", "plain notes\n")
	require.NoError(t, err)
	require.Equal(t, "plain notes\n", out)
	require.Empty(t, rules)

	// Ann's file is being looked at (her mark and a turn held).
	r := &s.redactions
	r.busy.Store("operator:ann", struct{}{})
	r.slots <- struct{}{}
	_, _, err = s.redact(ctx, "operator:ann", "b.txt", "more\n")
	require.ErrorIs(t, err, errdefs.ErrUnavailable)
	require.ErrorContains(t, err, "another text file of yours is being checked")
	_, _, err = s.redact(ctx, "operator:bob", "c.txt", "bob's notes\n")
	require.NoError(t, err, "the turn left is bob's")

	// Every turn held: a file waits within its context, then is refused.
	r.slots <- struct{}{}
	short, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = s.redact(short, "operator:carol", "d.txt", "carol's notes\n")
	require.ErrorIs(t, err, errdefs.ErrUnavailable)
	require.ErrorContains(t, err, "other files are being checked")
	<-r.slots
	<-r.slots
	r.busy.Delete("operator:ann")

	// Text with a run of encoded characters too long to look into whole.
	_, _, err = s.redact(ctx, "operator:ann", "e.txt", strings.Repeat("A", 2<<20))
	require.ErrorIs(t, err, errdefs.ErrTooLarge)
	require.ErrorContains(t, err, "without a space")
}
