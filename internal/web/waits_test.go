package web

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/bound"
)

// TestEveryWaitHasWords: no park reason reaches a web page as its raw
// name or a command to type.
func TestEveryWaitHasWords(t *testing.T) {
	for _, r := range bound.Reasons {
		w := waits(string(r))
		require.NotContains(t, w, string(r), r)
		require.NotContains(t, w, "paddock ", r)
		require.NotContains(t, w, "_", r)
	}
	require.True(t, strings.Contains(waits("something_new"), "something_new"), "an unknown reason is still shown")
}
