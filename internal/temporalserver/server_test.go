package temporalserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/temporalio/tchannel-go"
	tjson "github.com/temporalio/tchannel-go/json"
)

// TestRingNeedsTheClusterCertificate: beside the services' gRPC ports,
// the ring (membership) ports speak the internode mutual TLS too, so a
// stranger can neither read the membership nor order a member out of the
// ring (ringpop's /admin/member/leave).
func TestRingNeedsTheClusterCertificate(t *testing.T) {
	ca, caKey, err := NewAuthority()
	require.NoError(t, err)
	pki, err := Issue(ca, caKey, "127.0.0.1")
	require.NoError(t, err)
	var port int
	for range 50 {
		p := 20000 + rand.IntN(10000)
		if _, err := fixedPorts("127.0.0.1", p, 9); err == nil {
			port = p
			break
		}
	}
	require.NotZero(t, port)
	srv, err := Start(context.Background(), Options{SQLite: filepath.Join(t.TempDir(), "temporal.db"), Port: port, PKI: pki,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer srv.Stop()

	ch, err := tchannel.NewChannel("stranger", nil)
	require.NoError(t, err)
	defer ch.Close()
	for _, ring := range []int{port + 1, port + 3, port + 5, port + 7} { // frontend, history, matching, worker
		ctx, cancel := tjson.NewContext(5 * time.Second)
		var stats map[string]any
		err := tjson.CallPeer(ctx, ch.Peers().GetOrAdd(fmt.Sprintf("127.0.0.1:%d", ring)), "ringpop", "/admin/stats", nil, &stats)
		cancel()
		require.Error(t, err, "ring port %d answered a stranger", ring)
		ctx, cancel = tjson.NewContext(5 * time.Second)
		var status map[string]any
		err = tjson.CallPeer(ctx, ch.Peers().GetOrAdd(fmt.Sprintf("127.0.0.1:%d", ring)), "ringpop", "/admin/member/leave", map[string]any{}, &status)
		cancel()
		require.Error(t, err, "ring port %d took a leave order from a stranger", ring)
	}
}
