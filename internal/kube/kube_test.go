package kube

import (
	"os"
	"testing"

	"github.com/paddock-dev/paddock/internal/kube/crds"
	"github.com/stretchr/testify/require"
)

// TestDeployedCRDsAreTheControllers: deploy/kubernetes installs the very
// definitions the controller embeds (copy internal/kube/crds/crds.yaml there
// after changing it).
func TestDeployedCRDsAreTheControllers(t *testing.T) {
	deployed, err := os.ReadFile("../../deploy/kubernetes/crds.yaml")
	require.NoError(t, err)
	require.Equal(t, string(crds.YAML), string(deployed), "cp internal/kube/crds/crds.yaml deploy/kubernetes/crds.yaml")
	crds, err := CRDs()
	require.NoError(t, err)
	require.Len(t, crds, 2)
	for _, c := range crds {
		require.Equal(t, Group, c.Spec.Group)
		require.NotNil(t, c.Spec.Versions[0].Subresources.Status, "%s has a status subresource", c.Name)
	}
}

func TestSessionVia(t *testing.T) {
	for via, want := range map[string]string{
		"kubernetes:Session/team-a/first": "team-a/first",
		"kubernetes:Agent/team-a/first":   "",
		"kubernetes:Session/team-a":       "",
		"kubernetes:Session//first":       "",
		"kubernetes:Session/a/b/c":        "",
		"token:abc":                       "",
	} {
		key, ok := sessionVia(via)
		if want == "" {
			require.False(t, ok, via)
			continue
		}
		require.True(t, ok, via)
		require.Equal(t, want, key.String())
	}
}
