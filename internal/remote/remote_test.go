package remote

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/spec"
)

// TestLargePullRequestNumbers: a delivery's numbers, decoded as the API
// decodes them (json.Number), name pull requests of any size, in a ref
// template and in a release; a float from a payload made in code still
// does.
func TestLargePullRequestNumbers(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"pull_request":{"number":1000000},"repository":{"full_name":"team/app"}}`))
	dec.UseNumber()
	var payload any
	require.NoError(t, dec.Decode(&payload))
	require.Equal(t, int64(1000000), pullNumberOf(payload))
	ref, err := spec.TriggerSpec{Name: "gh-pr", Ref: "#{{.payload.pull_request.number}}"}.RenderRef("github.pull_request.opened", payload)
	require.NoError(t, err)
	require.Equal(t, "#1000000", ref)
	require.Equal(t, int64(7), pullNumberOf(map[string]any{"number": float64(7)}))
	for _, bad := range []any{json.Number("1.5"), json.Number("-3"), float64(2.5), "7"} {
		require.Zero(t, pullNumberOf(map[string]any{"number": bad}), "%v", bad)
	}
}
