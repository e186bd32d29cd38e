package app_test

import (
	"context"
	"crypto/tls"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/paddock-dev/paddock/internal/temporalserver"
)

// TestTemporalNeedsTheClusterCertificate: the embedded Temporal frontend
// takes only clients holding a certificate of the cluster's authority. A
// plain connection, a TLS one without a certificate, and one with a
// certificate of another authority are all turned away, so nobody who
// reaches the port can start a workflow or signal a session.
func TestTemporalNeedsTheClusterCertificate(t *testing.T) {
	ctx := context.Background()
	addr := shared.TemporalAddress()
	require.NotEmpty(t, addr)
	// The server's own client, holding the cluster's certificate, gets in.
	_, err := shared.Service.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)
	otherCA, otherKey, err := temporalserver.NewAuthority()
	require.NoError(t, err)
	stranger, err := temporalserver.Issue(otherCA, otherKey, "127.0.0.1")
	require.NoError(t, err)
	noCert := stranger.ClientTLS()
	noCert.Certificates, noCert.InsecureSkipVerify = nil, true
	wrongCA := stranger.ClientTLS()
	wrongCA.InsecureSkipVerify = true // even trusting any server: its own certificate is refused
	for name, try := range map[string]struct {
		cfg  *tls.Config
		want []string // the server's reason, or the connection it cut
	}{"plain": {nil, []string{"server preface"}}, "no certificate": {noCert, []string{"certificate required", "broken pipe", "connection reset"}},
		"another authority": {wrongCA, []string{"unknown certificate authority", "broken pipe", "connection reset"}}} {
		cfg := try.cfg
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		c, err := client.DialContext(dctx, client.Options{HostPort: addr, Namespace: temporalserver.Namespace, ConnectionOptions: client.ConnectionOptions{TLS: cfg}})
		cancel()
		if err == nil {
			_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "paddock-sessions"}, "DeliveryWorkflow")
			c.Close()
		}
		require.Error(t, err, name)
		require.True(t, slices.ContainsFunc(try.want, func(w string) bool { return strings.Contains(err.Error(), w) }), "%s: %v", name, err)
	}
}
