package config

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	env := map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_LOG_LEVEL": "warn", "PADDOCK_ADMIN_USER": "ana"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "/d", c.DataDir)
	require.Equal(t, "127.0.0.1:7470", c.Listen)
	require.Equal(t, slog.LevelWarn, c.LogLevel)
	require.Equal(t, "ana", c.AdminUser)
	require.Equal(t, ExecutionWorkstation, c.Execution)
	require.Equal(t, int64(10<<20), c.CommandMaxOutput)
	for k, v := range map[string]string{"PADDOCK_LOG_LEVEL": "loud", "PADDOCK_EXECUTION": "cloud", "PADDOCK_COMMAND_MAX_SECONDS": "-1",
		"PADDOCK_COMMAND_MAX_OUTPUT_BYTES": "lots", "PADDOCK_COMMAND_MAX_CPUS": "two", "PADDOCK_SESSION_MAX_DISK_BYTES": "1000", "PADDOCK_SESSION_MAX_FILES": "12",
		"PADDOCK_UNENFORCED_LIMITS": "disk,gpu", "PADDOCK_SANDBOX_READ_ONLY_PATHS": "opt/sdk", "PADDOCK_RETAIN_FAILED": "a week",
		"PADDOCK_SESSION_MAX_ACTIONS": "lots", "PADDOCK_SESSION_MAX_MINUTES": "0", "PADDOCK_SESSION_MAX_EXTENSIONS": "-1",
		"PADDOCK_SESSION_MAX_LIFETIME": "forever", "PADDOCK_LAYERS_MAX_BYTES": "big", "PADDOCK_TEMPORAL_PORT": "40000",
		"PADDOCK_LOG_FORMAT": "xml", "PADDOCK_METRICS_LISTEN": "0.0.0.0:9464", "OTEL_TRACES_SAMPLER": "sometimes", "OTEL_TRACES_EXPORTER": "zipkin"} {
		bad := map[string]string{"PADDOCK_DATA_DIR": "/d", k: v}
		_, err = Load(func(k string) string { return bad[k] })
		require.ErrorContains(t, err, k)
	}
	env["PADDOCK_EXECUTION"] = "server"
	env["PADDOCK_COMMAND_MAX_SECONDS"] = "30"
	env["PADDOCK_TEMPORAL_PORT"] = "7233"
	c, err = Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 7233, c.TemporalPort)
	require.Equal(t, ExecutionServer, c.Execution)
	require.Equal(t, 30*time.Second, c.CommandMax)
	require.Equal(t, 1.0, c.CommandMaxCPUs)
	require.Equal(t, int64(10<<30), c.SessionMaxDisk)
	require.Empty(t, c.Unenforced)
	env["PADDOCK_COMMAND_MAX_CPUS"], env["PADDOCK_SESSION_MAX_DISK_BYTES"], env["PADDOCK_UNENFORCED_LIMITS"] = "0.5", "1073741824", "disk, cpu"
	env["PADDOCK_SANDBOX_READ_ONLY_PATHS"], env["PADDOCK_RETAIN_FAILED"] = "/opt/sdk:/opt/jdk", "30m"
	c, err = Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 0.5, c.CommandMaxCPUs)
	require.Equal(t, int64(1<<30), c.SessionMaxDisk)
	require.Equal(t, map[string]bool{"disk": true, "cpu": true}, c.Unenforced)
	require.Equal(t, []string{"/opt/sdk", "/opt/jdk"}, c.ReadOnlyPaths)
	require.Equal(t, 30*time.Minute, c.RetainFailed)
	require.Equal(t, 150, c.Budget.Actions)
	env["PADDOCK_SESSION_MAX_ACTIONS"], env["PADDOCK_SESSION_MAX_MINUTES"], env["PADDOCK_SESSION_MAX_EXTENSIONS"] = "20", "10", "0"
	c, err = Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 20, c.Budget.Actions)
	require.Equal(t, 10*time.Minute, c.Budget.Active)
	require.Zero(t, c.Budget.Extensions)
	require.Equal(t, DefaultMetricsListen, c.MetricsListen)
	require.False(t, c.MetricsExplicit)
	env["PADDOCK_METRICS_LISTEN"], env["PADDOCK_METRICS_TOKEN"] = "0.0.0.0:9464", "t"
	c, err = Load(func(k string) string { return env[k] })
	require.NoError(t, err, "beyond loopback with a token")
	require.True(t, c.MetricsExplicit)
}

func TestLoggerFormat(t *testing.T) {
	var out bytes.Buffer
	Config{}.Logger(&out).Info("hello", "k", "v")
	require.JSONEq(t, `{"level":"INFO","msg":"hello","k":"v"}`, regexp.MustCompile(`"time":"[^"]*",`).ReplaceAllString(out.String(), ""))
	out.Reset()
	Config{LogFormat: "text"}.Logger(&out).Info("hello", "k", "v")
	require.Contains(t, out.String(), "msg=hello k=v")
}

func TestPrices(t *testing.T) {
	f := t.TempDir() + "/prices.yaml"
	require.NoError(t, os.WriteFile(f, []byte("anthropic/claude-x: {input: 3, output: 15}\n"), 0o644))
	c, err := Load(func(k string) string { return map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_PRICES": f}[k] })
	require.NoError(t, err)
	require.InDelta(t, 0.0105, c.Prices["anthropic/claude-x"].Cost(1000, 500), 1e-9)
	require.NoError(t, os.WriteFile(f, []byte("anthropic/claude-x: {inptu: 3}\n"), 0o644))
	_, err = Load(func(k string) string { return map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_PRICES": f}[k] })
	require.ErrorContains(t, err, "PADDOCK_PRICES")
}

func TestTriggerSecretsNameTheirProject(t *testing.T) {
	f := t.TempDir() + "/secrets.yaml"
	load := func(text string) (Config, error) {
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return Load(func(k string) string {
			return map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_TRIGGER_SECRETS": f}[k]
		})
	}
	c, err := load("team-a/gh-pr: a-secret-of-some-length\nteam-b/hook: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n")
	require.NoError(t, err)
	require.Equal(t, "a-secret-of-some-length", c.TriggerSecrets["team-a/gh-pr"])
	_, err = load("gh-pr: a-secret-of-some-length\n")
	require.ErrorContains(t, err, "write PROJECT/TRIGGER (default/gh-pr for the default project)")
	_, err = load("p/t: whsec_not-base64!!!!!!!!!!!\n")
	require.ErrorContains(t, err, "base64")
	_, err = load("p/t: short\n")
	require.ErrorContains(t, err, "shorter than 16")
}

func TestAuditWitnesses(t *testing.T) {
	load := func(v string) (Config, error) {
		return Load(func(k string) string {
			return map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_AUDIT_WITNESSES": v}[k]
		})
	}
	_, err := load("https://w.example=witness.example+12345678+AAAA")
	require.ErrorContains(t, err, "PADDOCK_AUDIT_WITNESSES")
	_, err = load("w.example")
	require.ErrorContains(t, err, "want URL=VERIFIER-KEY")
}

// TestEveryVariableIsReadAndDocumented keeps config.Vars, Load and the
// README's configuration table in step.
func TestEveryVariableIsReadAndDocumented(t *testing.T) {
	src, err := os.ReadFile("config.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, v := range Vars {
		require.Contains(t, string(src), `getenv("`+v.Name+`")`, "%s is listed but not read", v.Name)
		require.Contains(t, string(readme), "| `"+v.Name+"` |", "%s is missing from the README's table", v.Name)
	}
}

// TestOnlyConfigReadsVariables: no PADDOCK_* variable is read anywhere
// but here, so Vars (and the README) list every one.
func TestOnlyConfigReadsVariables(t *testing.T) {
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "config/config.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), `etenv("PADDOCK_`) {
			t.Errorf("%s reads a PADDOCK_ variable itself: read it in config.Load and list it in config.Vars", path)
		}
		return nil
	})
	require.NoError(t, err)
}

func TestPods(t *testing.T) {
	env := map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_POD_IMAGE": "registry.example/paddock:1"}
	load := func() (Config, error) { return Load(func(k string) string { return env[k] }) }
	_, err := load()
	require.ErrorContains(t, err, "need PADDOCK_EXECUTION=server and PADDOCK_KUBECONFIG")
	env["PADDOCK_EXECUTION"], env["PADDOCK_KUBECONFIG"] = "server", "in-cluster"
	_, err = load()
	require.ErrorContains(t, err, "set either to this node's pod IP", "pods reach no default address")
	for _, addr := range []string{"127.0.0.1:7444", "localhost:7444", "LOCALHOST:7444", "localhost.:7444", "ip6-localhost:7444", "127.1:7444", "0:7444",
		"0.0.0.0:7444", "[::1]:7444", "[::ffff:0.0.0.0]:7444", "[::ffff:127.0.0.1]:7444", "[fe80::1%lo]:7444", "node.example:7444"} {
		env["PADDOCK_POD_EGRESS_ADDRESS"] = addr
		_, err = load()
		require.ErrorContains(t, err, "want this node's pod IP", addr)
	}
	delete(env, "PADDOCK_POD_EGRESS_ADDRESS")
	env["PADDOCK_TEMPORAL_BROADCAST_ADDRESS"] = "10.0.3.7"
	c, err := load()
	require.NoError(t, err)
	require.Equal(t, &Pods{Image: "registry.example/paddock:1", Namespace: "paddock-sandboxes", WarmPool: 1, Idle: 15 * time.Minute, Egress: "10.0.3.7:7444"}, c.Pods,
		"the gateway is where the node is reached")
	for k, v := range map[string]string{"PADDOCK_POD_WARM_POOL": "-1", "PADDOCK_POD_IDLE": "soon", "PADDOCK_POD_EGRESS_ADDRESS": ":7444"} {
		env[k] = v
		_, err := load()
		require.ErrorContains(t, err, k)
		delete(env, k)
	}
	env["PADDOCK_POD_WARM_POOL"], env["PADDOCK_POD_IDLE"], env["PADDOCK_POD_RUNTIME_CLASS"] = "0", "90s", "none"
	c, err = load()
	require.NoError(t, err)
	require.Equal(t, 0, c.Pods.WarmPool)
	require.Equal(t, 90*time.Second, c.Pods.Idle)
	delete(env, "PADDOCK_POD_IMAGE")
	_, err = load()
	require.ErrorContains(t, err, "PADDOCK_POD_IMAGE is not")
	for k := range env {
		if strings.HasPrefix(k, "PADDOCK_POD_") {
			delete(env, k)
		}
	}
	c, err = load()
	require.NoError(t, err)
	require.Nil(t, c.Pods)
}

func TestKubeUsers(t *testing.T) {
	env := map[string]string{"PADDOCK_DATA_DIR": "/d", "PADDOCK_KUBE_USERS": " system:serviceaccount:ci:deployer=ci-bot , alice@example.com=alice,"}
	load := func() (Config, error) { return Load(func(k string) string { return env[k] }) }
	c, err := load()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"system:serviceaccount:ci:deployer": "ci-bot", "alice@example.com": "alice"}, c.KubeUsers)
	for _, bad := range []string{"ci-bot", "=ci-bot", "system:serviceaccount:ci:deployer=", "a=b,a=c"} {
		env["PADDOCK_KUBE_USERS"] = bad
		_, err := load()
		require.ErrorContains(t, err, "PADDOCK_KUBE_USERS", bad)
	}
}

// TestPricesOf: a model is priced by its own entry, else by the name its
// dated form extends; PADDOCK_PRICES overrides the built-in table.
func TestPricesOf(t *testing.T) {
	c, err := Load(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, Price{Input: 3, Output: 15}, c.Prices.Of("anthropic/claude-sonnet-4-5-20250929"))
	require.Equal(t, Price{Input: 0.25, Output: 2}, c.Prices.Of("openai/gpt-5-mini"), "the longest listed name wins")
	require.Equal(t, Price{}, c.Prices.Of("openai/unknown-model"))
	require.InDelta(t, 0.0105, c.Prices.Of("anthropic/claude-sonnet-4-5").Cost(1000, 500), 1e-9)
	f := filepath.Join(t.TempDir(), "prices.yaml")
	require.NoError(t, os.WriteFile(f, []byte("anthropic/claude-sonnet-4-5: {input: 1, output: 2}\nlocal/qwen: {input: 0, output: 0.1}\n"), 0o600))
	c, err = Load(func(k string) string { return map[string]string{"PADDOCK_PRICES": f}[k] })
	require.NoError(t, err)
	require.Equal(t, Price{Input: 1, Output: 2}, c.Prices.Of("anthropic/claude-sonnet-4-5"))
	require.Equal(t, Price{Input: 15, Output: 75}, c.Prices.Of("anthropic/claude-opus-4-1"), "the rest of the built-in table stays")
	require.Equal(t, Price{Output: 0.1}, c.Prices.Of("local/qwen"))
}
