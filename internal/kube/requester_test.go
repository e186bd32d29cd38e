package kube

import (
	"testing"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/stretchr/testify/require"
)

// A Kubernetes user is a Paddock user by the mapping first (the only way
// for a service account), else by name less the prefix.
func TestRequesterUser(t *testing.T) {
	r := &requesters{prefix: "oidc:", users: map[string]string{"system:serviceaccount:ci:deployer": "ci-bot", "oidc:alice@example.com": "alice"}}
	for who, want := range map[string]string{
		"system:serviceaccount:ci:deployer":  "ci-bot",
		"oidc:alice@example.com":             "alice",
		"oidc:bob":                           "bob",
		"bob":                                "",
		"oidc:":                              "",
		"system:serviceaccount:ci:other":     "",
		"system:admin":                       "",
		"system:serviceaccount:ci:deployer ": "",
	} {
		got, err := r.user(who)
		if want == "" {
			require.ErrorIs(t, err, errdefs.ErrDenied, who)
			require.ErrorContains(t, err, "PADDOCK_KUBE_USERS", who)
			continue
		}
		require.NoError(t, err, who)
		require.Equal(t, want, got, who)
	}
	// Without a prefix, a plain name is the user's, and system: is not.
	r = &requesters{}
	got, err := r.user("carol")
	require.NoError(t, err)
	require.Equal(t, "carol", got)
	_, err = r.user("system:kube-controller-manager")
	require.ErrorIs(t, err, errdefs.ErrDenied)
}
