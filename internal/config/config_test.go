package config

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	env := map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_LOG_LEVEL": "warn", "PADDOCK_OPERATOR": "ana"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "/d", c.DataDir)
	require.Equal(t, "127.0.0.1:7470", c.Listen)
	require.Equal(t, slog.LevelWarn, c.LogLevel)
	require.Equal(t, "ana", c.Operator)
	require.Equal(t, ExecutionWorkstation, c.Execution)
	require.Equal(t, int64(10<<20), c.CommandMaxOutput)
	for k, v := range map[string]string{"PADDOCK_LOG_LEVEL": "loud", "PADDOCK_EXECUTION": "cloud", "PADDOCK_COMMAND_MAX_SECONDS": "-1",
		"PADDOCK_COMMAND_MAX_OUTPUT_BYTES": "lots"} {
		bad := map[string]string{"PADDOCK_DATA_DIR": "/d", k: v}
		_, err = Load(func(k string) string { return bad[k] })
		require.ErrorContains(t, err, k)
	}
	env["PADDOCK_EXECUTION"] = "server"
	env["PADDOCK_COMMAND_MAX_SECONDS"] = "30"
	c, err = Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, ExecutionServer, c.Execution)
	require.Equal(t, 30*time.Second, c.CommandMax)
}
