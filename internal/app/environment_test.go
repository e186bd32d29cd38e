package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// moduleProxyHost is the host:443 of the machine's Go module proxy, from
// its Go configuration (never hard-coded).
func moduleProxyHost(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	require.NoError(t, err)
	first := strings.FieldsFunc(strings.TrimSpace(string(out)), func(r rune) bool { return r == ',' || r == '|' })[0]
	u, err := url.Parse(first)
	if err != nil || u.Host == "" {
		t.Skipf("GOPROXY=%s names no proxy host", out)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Hostname() + ":" + port
}

// commit makes a repository of files.
func commit(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

// envSession runs a session of agent on repo through its first turn,
// approving what the gate asks, and returns it with its phases (by name)
// and its calls' results.
func envSession(t *testing.T, agent, repo string) (session.Session, map[session.RuntimePhase]session.PhaseData, []string) {
	t.Helper()
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: agent, Repo: repo, Message: "test it"})
	require.NoError(t, err)
	approveTurns(t, x.ID, 1, "run the tests")
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	phases := map[session.RuntimePhase]session.PhaseData{}
	for _, e := range events {
		if e.Kind == session.EventPhase {
			var d session.PhaseData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			phases[d.Phase] = d
		}
	}
	var results []string
	for _, c := range finalCalls(t, api, x.ID) {
		results = append(results, c.Result+c.Error)
	}
	return x, phases, results
}

// provisioning is the time a session's phases took.
func provisioning(phases map[session.RuntimePhase]session.PhaseData) time.Duration {
	var d time.Duration
	for _, p := range phases {
		d += time.Duration(p.DurationMs) * time.Millisecond
	}
	return d
}

// TestGoEnvironmentSetupThenOffline: setup downloads a third-party module
// with only the module proxy allowed, and warms the build cache; the
// agent's `go test` then passes with no network at all, its module cache
// read-only; a second session on the same repository starts from the
// saved layer (and a copy of the warmed build cache) and skips setup.
func TestGoEnvironmentSetupThenOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("reaches the Go module proxy")
	}
	proxy := moduleProxyHost(t)
	repo := commit(t, map[string]string{
		"go.mod": "module envtest\n\ngo 1.26\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum": "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\n" +
			"github.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n",
		"id.go":      "package envtest\n\nimport \"github.com/google/uuid\"\n\n// ID is a fresh identifier.\nfunc ID() string { return uuid.NewString() }\n",
		"id_test.go": "package envtest\n\nimport \"testing\"\n\nfunc TestID(t *testing.T) {\n\tif len(ID()) != 36 {\n\t\tt.Fatal(ID())\n\t}\n}\n",
	})
	name := unique("gotest")
	model := replayCommand(t, name, `go test -count=1 ./... 2>&1; touch "$(go env GOMODCACHE)/planted" 2>/dev/null && echo CACHE-WRITABLE || echo module cache read-only; curl -sS --max-time 10 https://`+proxy+`/ >/dev/null 2>&1 || echo offline`)
	applyAgent(t, name, model, fmt.Sprintf(`tools: [run_command]
environment:
  setup: go mod download && go test -count=1 -run '^$' ./...
  network:
    setup: [%q]
`, proxy))

	first, phases, results := envSession(t, name, repo)
	require.Contains(t, phases, session.PhaseBuildingImage, "the first session builds the layer")
	require.Contains(t, phases[session.PhaseBuildingImage].Detail, "environment layer")
	require.Contains(t, fmt.Sprint(results), "ok  \tenvtest", "the tests pass offline: %v", results)
	require.Contains(t, fmt.Sprint(results), "module cache read-only")
	require.Contains(t, fmt.Sprint(results), "offline")
	require.NotContains(t, fmt.Sprint(results), "CACHE-WRITABLE")
	require.True(t, hasNetwork(t, first.ID, "setup", true), "setup's connections to the module proxy are recorded")

	second, phases2, results2 := envSession(t, name, repo)
	require.NotContains(t, phases2, session.PhaseBuildingImage, "the second session skips setup")
	require.Contains(t, phases2[session.PhasePreparingEnvironment].Detail, "setup skipped")
	require.Contains(t, fmt.Sprint(results2), "ok  \tenvtest", "%v", results2)
	require.NotContains(t, fmt.Sprint(results2), "CACHE-WRITABLE")
	require.False(t, hasNetwork(t, second.ID, "setup", true))
	t.Logf("provisioning: first session (setup) %s, second (layer restored) %s", provisioning(phases), provisioning(phases2))
}

// TestNpmEnvironmentSetupThenOffline: the same for an npm project with a
// lock file: setup runs `npm ci` with only the registry allowed; the
// agent's `npm test` passes offline; the second session restores
// node_modules from the layer.
func TestNpmEnvironmentSetupThenOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("reaches the npm registry")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	registry := "registry.npmjs.org:443"
	repo := commit(t, map[string]string{
		".gitignore":   "node_modules/\n",
		"package.json": `{"name":"envtest","version":"1.0.0","private":true,"scripts":{"test":"node test.js"},"dependencies":{"is-number":"7.0.0"}}` + "\n",
		"package-lock.json": `{"name":"envtest","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{` +
			`"":{"name":"envtest","version":"1.0.0","dependencies":{"is-number":"7.0.0"}},` +
			`"node_modules/is-number":{"version":"7.0.0","resolved":"https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",` +
			`"integrity":"sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==","license":"MIT","engines":{"node":">=0.12.0"}}}}` + "\n",
		"test.js": "const isNumber = require('is-number');\nif (!isNumber(5) || isNumber('x')) process.exit(1);\nconsole.log('npm tests passed');\n",
	})
	name := unique("npmtest")
	model := replayCommand(t, name, `npm test 2>&1; curl -sS --max-time 10 https://registry.npmjs.org/ >/dev/null 2>&1 || echo offline`)
	applyAgent(t, name, model, fmt.Sprintf(`tools: [run_command]
environment:
  setup: npm ci --no-audit --no-fund
  network:
    setup: [%q]
`, registry))

	_, phases, results := envSession(t, name, repo)
	require.Contains(t, phases, session.PhaseBuildingImage)
	require.Contains(t, fmt.Sprint(results), "npm tests passed", "%v", results)
	require.Contains(t, fmt.Sprint(results), "offline")

	x, phases2, results2 := envSession(t, name, repo)
	require.NotContains(t, phases2, session.PhaseBuildingImage)
	require.Contains(t, phases2[session.PhasePreparingEnvironment].Detail, "setup skipped")
	require.Contains(t, fmt.Sprint(results2), "npm tests passed", "%v", results2)
	d, err := api.Review().Diff(context.Background(), x.ID)
	require.NoError(t, err)
	require.Empty(t, d.Files, "restored dependencies are not the agent's changes")

	// Another commit, same manifests: setup may run any file of the
	// repository, so by default a layer serves only the same files.
	require.NoError(t, os.WriteFile(filepath.Join(repo, "test.js"), []byte("console.log('npm tests passed');\n"), 0o644))
	out, err := exec.Command("git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "change").CombinedOutput()
	require.NoError(t, err, string(out))
	_, phases3, _ := envSession(t, name, repo)
	require.Contains(t, phases3, session.PhaseBuildingImage, "a new tree builds its own layer")
	t.Logf("provisioning: first session (setup) %s, second (layer restored) %s", provisioning(phases), provisioning(phases2))
}

// TestFailingSetupFailsTheSession: a setup that fails ends the session at
// start with the tail of its output; nothing is saved.
func TestFailingSetupFailsTheSession(t *testing.T) {
	name := unique("badsetup")
	model := replayCommand(t, name, "true")
	applyAgent(t, name, model, "tools: [run_command]\nenvironment:\n  setup: |\n    echo preparing\n    echo 'go: github.com/x/y@v1: no network' >&2\n    exit 3\n")
	x, err := api.Sessions().Create(context.Background(), wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "go"})
	require.NoError(t, err)
	s := waitStatus(t, x.ID, session.StatusFailed)
	require.Contains(t, s.Error, "environment setup failed (exit status 3")
	require.Contains(t, s.Error, "github.com/x/y@v1: no network")
	// Nothing was saved: a retry runs setup again.
	again, err := api.Sessions().Retry(context.Background(), x.ID)
	require.NoError(t, err)
	s = waitStatus(t, again.ID, session.StatusFailed)
	require.Contains(t, s.Error, "environment setup failed (exit status 3")
	events, err := api.Sessions().Events(context.Background(), again.ID, 0)
	require.NoError(t, err)
	var phases []string
	for _, e := range events {
		if e.Kind == session.EventPhase {
			var d session.PhaseData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			phases = append(phases, string(d.Phase)+": "+d.Error)
		}
	}
	require.Len(t, phases, 1)
	require.Contains(t, phases[0], "building_image: environment setup failed")
}

// TestCommandsEgressIsRecordedAndRefusalsNamed: an agent whose commands
// may reach one host; a command's connection elsewhere is refused, the
// refusal named in its output (whatever the client prints) and recorded.
func TestCommandsEgressIsRecordedAndRefusalsNamed(t *testing.T) {
	name := unique("egress")
	model := replayCommand(t, name, `curl -sS --max-time 20 https://not-allowed.example/ 2>&1; echo`)
	applyAgent(t, name, model, "tools: [run_command]\nenvironment:\n  network:\n    commands: [\"allowed.example:443\"]\n")
	x, _, results := envSession(t, name, gitRepo(t))
	require.Contains(t, fmt.Sprint(results), "network to not-allowed.example is not allowed by this agent's environment", "%v", results)
	require.True(t, hasNetwork(t, x.ID, "command", false))
}

// replayCommand writes a replay script whose agent runs one command and
// ends, and names its model.
func replayCommand(t *testing.T, name, command string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(sharedDir, "replay"), 0o700))
	file := name + ".yaml"
	require.NoError(t, os.WriteFile(filepath.Join(sharedDir, "replay", file), []byte(fmt.Sprintf(`steps:
  - text: "Running it."
    toolCalls:
      - name: run_command
        args: {command: %q}
  - text: "Done."
`, command)), 0o600))
	return "replay/" + file
}

// hasNetwork says whether the session recorded a connection of phase,
// allowed or refused as said.
func hasNetwork(t *testing.T, id, phase string, allowed bool) bool {
	t.Helper()
	events, err := api.Sessions().Events(context.Background(), id, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Kind != session.EventNetwork {
			continue
		}
		var d session.NetworkData
		require.NoError(t, json.Unmarshal(e.Data, &d))
		if d.Phase == phase && d.Allowed == allowed {
			return true
		}
	}
	return false
}
