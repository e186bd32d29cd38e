package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestRetryRunsTheAgentAsAppliedNow: a failed session's retry runs its
// agent as it is applied now (fixed since), under a policy no looser than
// the failed session's.
func TestRetryRunsTheAgentAsAppliedNow(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	broken := spec.Agent{Name: "fixme", Project: "default", Model: "replay/testdata/script.yaml", Tools: []string{"read_file"},
		Policy: &spec.PolicySpec{Tools: map[string]string{"read_file": "ask"}}}
	s := f.service(t, broken)
	by := identity.Principal{User: "t", Admin: true}
	x, err := s.Sessions().Create(ctx, by, wire.CreateRequest{Agent: "fixme", Message: "go", Repo: f.repo})
	require.NoError(t, err)
	require.NoError(t, f.st.FailSession(ctx, x.ID, "provisioning failed: something"))

	fixed := broken
	fixed.Tools = []string{"read_file", "list_dir"}
	fixed.Policy = &spec.PolicySpec{Tools: map[string]string{"read_file": "allow"}}
	fixed.Defaults()
	_, err = f.st.ApplyAgents(ctx, []spec.Record{{Project: "default", Name: "fixme", Spec: fixed.JSON(), Digest: fixed.Digest()}})
	require.NoError(t, err)

	y, err := s.Sessions().Retry(ctx, by, x.ID)
	require.NoError(t, err)
	require.Equal(t, fixed.Digest(), y.AgentVersion)
	var sp spec.Agent
	require.NoError(t, json.Unmarshal(y.AgentSpec, &sp))
	require.Equal(t, []string{"read_file", "list_dir"}, sp.Tools)
	p, err := policy.Pinned(y.Policy)
	require.NoError(t, err)
	v, _ := p.Tool("read_file")
	require.Equal(t, "ask", v.Short(), "the retry's policy is no looser than the failed session's")
}
