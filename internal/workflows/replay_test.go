package workflows

import (
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistory replays a real session's history (recorded from
// the embedded server by `go test ./internal/app -run Lifecycle -update`)
// against today's workflow code: a non-deterministic change fails here.
func TestReplayRecordedHistory(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(SessionWorkflow)
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/history.json"))
}
