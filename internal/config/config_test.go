package config

import (
	"log/slog"
	"testing"

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
	env["PADDOCK_LOG_LEVEL"] = "loud"
	_, err = Load(func(k string) string { return env[k] })
	require.ErrorContains(t, err, "PADDOCK_LOG_LEVEL")
}
