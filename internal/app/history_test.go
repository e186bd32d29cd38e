package app_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/temporalproto"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/vault"
)

var update = flag.Bool("update", false, "rewrite ../workflows/testdata/history.json from a real run")

// recordHistory saves a real session's workflow history for the engine's
// replay test, when run with -update.
func recordHistory(t *testing.T, sessionID string) {
	if !*update {
		return
	}
	it := shared.Service.Temporal.GetWorkflowHistory(context.Background(), session.WorkflowID(sessionID), "", false, 0)
	var h historypb.History
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	// Recorded in the clear (payloads and failure attributes decoded with
	// the server's key), so the replay needs no key.
	key, err := vault.Load(sharedDir, "")
	require.NoError(t, err)
	codec := vault.Codec{Key: key}
	require.NoError(t, proxy.VisitPayloads(context.Background(), &h, proxy.VisitPayloadsOptions{
		Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
			return codec.Decode(ps)
		},
	}))
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("../workflows/testdata/history.json", data, 0o644))
}
