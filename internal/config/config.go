// Package config reads Paddock's settings: defaults, then PADDOCK_*
// environment variables, then flags (applied by the CLI). It is the only
// place that reads the environment.
package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the process configuration.
type Config struct {
	DataDir         string
	Listen          string
	Server          string
	TemporalAddress string
	LogLevel        slog.Level
	Operator        string
	// Execution is where sandboxes run: "workstation" or "server".
	Execution        string
	CommandMax       time.Duration
	CommandMaxOutput int64
	// Prices are USD per million tokens by model (PROVIDER/MODEL).
	Prices map[string]Price
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
}

// Cost is the price of a call.
func (p Price) Cost(in, out int) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Execution places.
const (
	ExecutionWorkstation = "workstation"
	ExecutionServer      = "server"
)

// Var documents one environment variable; the README table lists them all.
type Var struct {
	Name, Default, Meaning string
}

// Vars are every PADDOCK_* variable Paddock reads.
var Vars = []Var{
	{"PADDOCK_DATA_DIR", "~/.paddock (/var/lib/paddock as root)", "where the store, the embedded Temporal database and working copies live"},
	{"PADDOCK_LISTEN", "127.0.0.1:7470", "address `paddock serve` listens on (loopback unless told otherwise)"},
	{"PADDOCK_SERVER", "(none)", "URL of a running server for client commands; `run`/`demo` start an in-process server when unset"},
	{"PADDOCK_TEMPORAL_ADDRESS", "(none: embedded)", "host:port of an external Temporal cluster instead of the embedded server"},
	{"PADDOCK_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"PADDOCK_OPERATOR", "the OS user name", "identity stamped on commands sent through this server"},
	{"PADDOCK_EXECUTION", "workstation", "where sandboxes run: workstation (beside paddock run) or server (the execution host)"},
	{"PADDOCK_COMMAND_MAX_SECONDS", "600", "longest a sandboxed command may run"},
	{"PADDOCK_COMMAND_MAX_OUTPUT_BYTES", "10485760", "most output kept from a command; the rest is counted and discarded"},
	{"PADDOCK_PRICES", "(none: cost 0)", "YAML file of model prices, USD per million tokens: `anthropic/claude-sonnet-4-5: {input: 3, output: 15}`"},
}

// Load reads the environment through getenv (os.Getenv in production).
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DataDir:         getenv("PADDOCK_DATA_DIR"),
		Listen:          getenv("PADDOCK_LISTEN"),
		Server:          getenv("PADDOCK_SERVER"),
		TemporalAddress: getenv("PADDOCK_TEMPORAL_ADDRESS"),
		Operator:        getenv("PADDOCK_OPERATOR"),
	}
	if c.DataDir == "" && os.Getuid() == 0 {
		// Root's home is private, and the sandbox user must reach the working copies.
		c.DataDir = "/var/lib/paddock"
	}
	if c.DataDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, fmt.Errorf("PADDOCK_DATA_DIR is unset and the home directory is unknown: %w", err)
		}
		c.DataDir = filepath.Join(home, ".paddock")
	}
	switch c.Execution = getenv("PADDOCK_EXECUTION"); c.Execution {
	case "":
		c.Execution = ExecutionWorkstation
	case ExecutionWorkstation, ExecutionServer:
	default:
		return c, fmt.Errorf("PADDOCK_EXECUTION=%q: want workstation or server", c.Execution)
	}
	c.CommandMax = 10 * time.Minute
	if v := getenv("PADDOCK_COMMAND_MAX_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_SECONDS=%q: want a whole number of seconds, at least 1", v)
		}
		c.CommandMax = time.Duration(n) * time.Second
	}
	if f := getenv("PADDOCK_PRICES"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return c, fmt.Errorf("PADDOCK_PRICES: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c.Prices); err != nil {
			return c, fmt.Errorf("PADDOCK_PRICES=%s: want MODEL: {input: USD per Mtok, output: USD per Mtok}: %w", f, err)
		}
	}
	c.CommandMaxOutput = 10 << 20
	if v := getenv("PADDOCK_COMMAND_MAX_OUTPUT_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return c, fmt.Errorf("PADDOCK_COMMAND_MAX_OUTPUT_BYTES=%q: want a whole number of bytes, at least 1", v)
		}
		c.CommandMaxOutput = n
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7470"
	}
	if c.Operator == "" {
		if u, err := user.Current(); err == nil {
			c.Operator = u.Username
		} else {
			c.Operator = "operator"
		}
	}
	switch lvl := strings.ToLower(getenv("PADDOCK_LOG_LEVEL")); lvl {
	case "", "info":
		c.LogLevel = slog.LevelInfo
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn", "warning":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		return c, fmt.Errorf("PADDOCK_LOG_LEVEL=%q: want debug, info, warn or error", lvl)
	}
	return c, nil
}
