package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/session"
)

// TestBackgroundServer: a server a client command starts for itself
// listens on a Unix socket in a directory of the user's alone, records
// itself as background with its process in the data directory's lock,
// and says it is idle once unused; a socket in a directory others reach
// is refused.
func TestBackgroundServer(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.Mkdir(run, 0o755))
	cfg := config.Config{DataDir: filepath.Join(dir, "data"), Listen: "unix:" + filepath.Join(run, "api.sock"), Background: true, AdminUser: "bg", LogLevel: slog.LevelWarn}
	_, err := app.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "this user's alone")

	require.NoError(t, os.Chmod(run, 0o700))
	a, err := app.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer a.Stop()
	require.Equal(t, cfg.Listen, a.URL)
	fi, err := os.Stat(filepath.Join(run, "api.sock"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	h, held := datadir.Holder(cfg.DataDir)
	require.True(t, held)
	require.Equal(t, a.URL, h.URL)
	require.Equal(t, os.Getpid(), h.PID)
	require.True(t, h.Background)

	token, err := os.ReadFile(filepath.Join(cfg.DataDir, datadir.AdminToken))
	require.NoError(t, err)
	c := client.New(a.URL).WithToken(strings.TrimSpace(string(token)))
	_, err = c.Sessions().List(context.Background(), session.Filter{})
	require.NoError(t, err)
	_, err = client.New(a.URL).Sessions().List(context.Background(), session.Filter{})
	require.Error(t, err, "the socket is the user's, and the API still wants their token")

	select {
	case <-a.Idle(context.Background(), 300*time.Millisecond):
	case <-time.After(time.Minute):
		t.Fatal("an unused server never said it was idle")
	}
}
