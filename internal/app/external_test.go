package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/temporalserver"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestExternalTemporal runs Paddock against a Temporal server it did not
// start (--temporal-address), as it would against a cluster.
func TestExternalTemporal(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ts, err := temporalserver.Start(ctx, temporalserver.Options{SQLite: filepath.Join(t.TempDir(), "cluster.db"), Logger: logger})
	require.NoError(t, err)
	defer ts.Stop()
	dir := dataDir(t)
	a, err := app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", TemporalAddress: ts.HostPort(), AdminUser: "ext"}, logger)
	require.NoError(t, err)
	defer a.Stop()
	require.NoFileExists(t, filepath.Join(dir, "temporal.db"), "no embedded server")
	c := client.New(a.URL).WithToken(readToken(dir))
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Model: scriptIn(t, dir, "empty.yaml"), Message: "hello"})
	require.NoError(t, err)
	waitFor(t, "the turn to complete", func() (bool, error) {
		turns, err := c.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnCompleted, err
	})

	// A second process on the same data directory is refused clearly.
	_, err = app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", TemporalAddress: ts.HostPort()}, logger)
	require.ErrorContains(t, err, "in use by the paddock server at "+a.URL, "the message names the real address")
}
