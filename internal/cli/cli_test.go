package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/wire"
)

var serverURL string

// dataDir is the test server's data directory (replay scripts go under
// its replay/ folder).
var dataDir string

// adminToken is the test server's first administrator's token.
var adminToken string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "paddock-cli-test-")
	if err != nil {
		panic(err)
	}
	a, err := app.Start(context.Background(), config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "cli-tester", LogLevel: slog.LevelWarn},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverURL = a.URL
	dataDir = dir
	token, err := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	adminToken = strings.TrimSpace(string(token))
	code := m.Run()
	a.Stop()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// run runs paddock with args against the test server.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"PADDOCK_SERVER": serverURL, "PADDOCK_DATA_DIR": t.TempDir(), "PADDOCK_TOKEN": adminToken}
	code := cli.Run(context.Background(), args, cli.IO{Server: app.CLI, In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestApplyIsIdempotentAndStrict(t *testing.T) {
	name := fmt.Sprintf("cli-agent-%d", time.Now().UnixNano()%1e9)
	f := writeFile(t, "agent.yaml", "name: "+name+"\nmodel: replay/demo\n")
	code, out, _ := run(t, "", "apply", "-f", f)
	require.Equal(t, 0, code)
	require.Equal(t, "agent/"+name+" created\n", out)
	_, out, _ = run(t, "", "apply", "-f", f)
	require.Equal(t, "agent/"+name+" unchanged\n", out)
	f2 := writeFile(t, "agent.yaml", "name: "+name+"\nmodel: replay/demo\nconcurrency: 1\n")
	_, out, _ = run(t, "", "apply", "-f", f2)
	require.Equal(t, "agent/"+name+" configured\n", out)

	bad := writeFile(t, "bad.yaml", "name: "+name+"\nmodel: replay/demo\ntools: [read_file, nuke]\n")
	code, out, errOut := run(t, "", "apply", "-f", bad)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `tools[1]: unknown tool "nuke"`)
	code, _, errOut = run(t, "", "apply")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "-f FILE")
	code, out, _ = run(t, "", "agents", "ls")
	require.Equal(t, 0, code)
	require.Contains(t, out, name)
}

func TestDemo(t *testing.T) {
	code, out, errOut := run(t, "", "demo")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"⚙ edit_file", "? Should I also add a CHANGELOG entry?", "the demo operator answers: yes",
		"· turn completed", "modified  README.md", "added     CHANGELOG.md", "+Hello, world!", "the repository itself is untouched",
		"throwaway repository removed", "paddock run --model replay/demo --repo DIR"} {
		require.Contains(t, out, want)
	}
	repo := strings.TrimSpace(strings.Split(strings.TrimPrefix(out, "demo repository: "), " ")[0])
	require.NoDirExists(t, repo, "the demo leaves nothing in /tmp")
}

func TestRunNonInteractiveStopsAtQuestion(t *testing.T) {
	code, out, errOut := run(t, "", "run", "--non-interactive", "--model", "replay/demo", "--repo", t.TempDir(), "look around")
	// The repo is not a git repository: refused at once, saying so.
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "is not a git repository")
	require.NotContains(t, errOut, "retry")
	code, _, errOut = run(t, "", "run", "--non-interactive", "--model", "replay/demo", "--repo", "/no/such/dir", "look around")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "does not exist")
	code, _, errOut = run(t, "", "run", "--empty", "--model", "replay/demo")
	require.Equal(t, 2, code, "a run without a prompt is a usage error")
	require.Contains(t, errOut, "needs a prompt")

	// The default policy asks before edits: a non-interactive run rejects
	// the edit and says why; an interactive one asks at the terminal.
	code, out, errOut = run(t, "", "run", "--empty", "--non-interactive", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "the tool call edit_file was rejected: this session is non-interactive")
	code, out, errOut = run(t, "y\n2\ny\n", "run", "--empty", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 0, code, errOut+out)
	require.Contains(t, out, "edit_file needs permission (default=ask)")
	require.Contains(t, out, "approved by cli-tester")
	require.Contains(t, out, "changelog=no")
	require.Contains(t, out, "next: paddock sessions diff")

	// With a project policy that allows edits, a non-interactive run stops
	// at the question instead.
	f := writeFile(t, "policy.yaml", "default: allow\n")
	code, out, _ = run(t, "", "policy", "apply", "-f", f)
	require.Equal(t, 0, code)
	require.Contains(t, out, "project/default policy sha256:")
	defer run(t, "", "policy", "apply", "-f", writeFile(t, "back.yaml", "default: ask\ntools: {read_file: allow, list_dir: allow, ask_user: allow}\n"))
	code, out, errOut = run(t, "", "run", "--empty", "--non-interactive", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "? Should I also add a CHANGELOG entry?")
	require.Contains(t, errOut, "non-interactive")
	require.Contains(t, errOut, "paddock sessions answer")

	code, out, _ = run(t, "", "sessions", "ls")
	require.Equal(t, 0, code)
	require.Contains(t, out, "fix the typo")
}

func TestSessionsCommandsReportErrors(t *testing.T) {
	code, _, errOut := run(t, "", "sessions", "send", "no-such-session", "hi")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not found")
	code, _, errOut = run(t, "", "sessions", "answer", "x", "call", "notkv")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "QUESTION_ID=OPTION")
	code, out, _ := run(t, "", "version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "paddock")
}

func TestSandboxExec(t *testing.T) {
	dir := t.TempDir()
	if os.Getuid() == 0 {
		require.NoError(t, os.Chown(dir, 61000, 61000))
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	}
	code, out, errOut := run(t, "", "sandbox", "exec", "--workdir", dir, "--", "echo hi > f.txt; cat f.txt; exit 7")
	require.Equal(t, 7, code, errOut)
	require.Equal(t, "hi\n", out)
	code, out, errOut = run(t, "", "sandbox", "exec", "--workdir", dir, "--max-output", "5", "--", "printf", "0123456789")
	require.Equal(t, 0, code)
	require.Equal(t, "01234", out)
	require.Contains(t, errOut, "5 bytes beyond the 5-byte limit were discarded")
	code, _, errOut = run(t, "", "sandbox", "exec", "--workdir", dir, "--timeout", "1s", "--", "sleep 30")
	require.Equal(t, 124, code)
	require.Contains(t, errOut, "timed out")
}

// TestRunAgainstOpenAICompatibleServer: paddock run --model openai/NAME
// talks to whatever OPENAI_BASE_URL names, through the official SDK.
func TestRunAgainstOpenAICompatibleServer(t *testing.T) {
	stream, err := os.ReadFile("../provider/openai/testdata/text.sse")
	require.NoError(t, err)
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "")
	code, out, errOut := run(t, "", "run", "--empty", "--model", "openai/qwen2.5-coder", "say hello")
	require.Equal(t, 0, code, errOut+out)
	require.Contains(t, out, "All done.")
	require.Equal(t, []string{"/v1/chat/completions"}, paths)

	t.Setenv("OPENAI_BASE_URL", "")
	code, _, errOut = run(t, "", "run", "--empty", "--model", "openai/gpt-x", "say hello")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "OPENAI_API_KEY is not set", "a missing key is a clear error at session start")
}

// runEnv runs paddock with exactly env as its environment.
func runEnv(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if env["PADDOCK_SERVER"] == serverURL && env["PADDOCK_TOKEN"] == "" {
		env["PADDOCK_TOKEN"] = adminToken
	}
	code := cli.Run(context.Background(), args, cli.IO{Server: app.CLI, In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// TestLocalDataDirectory: with no server configured, client commands open
// the data directory in-process when nobody holds it, and use the server
// holding it otherwise (its lock records its address).
func TestLocalDataDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711)) // the sandbox user reaches working copies
	env := map[string]string{"PADDOCK_DATA_DIR": dir}
	code, out, errOut := runEnv(t, env, "", "run", "--empty", "--non-interactive", "--model", "replay/demo", "look around")
	require.NotEqual(t, 0, code, "the default policy rejects the edit non-interactively")
	require.Contains(t, errOut, "in-process")
	require.Contains(t, out, "session ")
	id := strings.Fields(out[strings.Index(out, "session ")+len("session "):])[0]
	for _, args := range [][]string{{"sessions", "ls"}, {"sessions", "logs", id}, {"sessions", "get", id}, {"approvals", "ls"}} {
		code, out, errOut = runEnv(t, env, "", args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
	}
	code, out, _ = runEnv(t, env, "", "sessions", "ls")
	require.Equal(t, 0, code)
	require.Contains(t, out, id)

	// A server holds the directory: the CLI talks to it, and a second
	// server is told where the first one is.
	a, err := app.Start(context.Background(), config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "holder"},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()
	code, out, errOut = runEnv(t, env, "", "sessions", "ls")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, id)
	_, err = app.Start(context.Background(), config.Config{DataDir: dir, Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "in use by the paddock server at "+a.URL)
}

// TestRunWorksOnTheRepositoryYouAreIn: paddock run inside a repository
// works on its checkout as it is (an uncommitted edit the agent must see,
// an untracked file), the diff holds the agent's changes only, accept
// lands them beside the person's work; outside a repository run says how
// to start.
func TestRunWorksOnTheRepositoryYouAreIn(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	env := map[string]string{"PADDOCK_DATA_DIR": dir}
	repo := t.TempDir()
	git := func(args ...string) {
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("# salutations\n"), 0o644))
	git("add", "-A")
	git("commit", "-qm", "init")
	// Work in progress: the typo the agent fixes exists only uncommitted.
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("Helo, world!\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("mine\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "sub"), 0o755))
	t.Chdir(filepath.Join(repo, "sub"))

	code, out, errOut := runEnv(t, env, "y\n2\ny\n", "run", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 0, code, errOut+out)
	id := strings.Fields(out[strings.Index(out, "session ")+len("session "):])[0]
	code, out, errOut = runEnv(t, env, "", "sessions", "diff", id)
	if code != 0 {
		log, _ := os.ReadFile(filepath.Join(dir, "local.log"))
		t.Fatalf("%s\n%s", errOut, log)
	}
	require.Contains(t, out, "-Helo, world!\n+Hello, world!")
	require.NotContains(t, out, "salutations", "the person's own change is the base, not the diff")
	require.NotContains(t, out, "notes.txt")
	require.Equal(t, "Helo, world!\n", readFile(t, filepath.Join(repo, "README.md")), "nothing reaches the checkout before accept")

	code, out, errOut = runEnv(t, env, "", "sessions", "accept", id, "--uncommitted")
	require.Equal(t, 0, code, errOut+out)
	require.Equal(t, "Hello, world!\n", readFile(t, filepath.Join(repo, "README.md")))
	require.Equal(t, "mine\n", readFile(t, filepath.Join(repo, "notes.txt")))
	require.FileExists(t, filepath.Join(repo, "CHANGELOG.md"))

	// A home directory kept in git is not taken whole without --repo.
	t.Chdir(filepath.Join(repo, "sub"))
	code, _, errOut = runEnv(t, map[string]string{"PADDOCK_DATA_DIR": dir, "HOME": repo}, "", "run", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "is your home directory")
	require.Contains(t, errOut, "--repo "+repo)

	t.Chdir(t.TempDir())
	code, _, errOut = runEnv(t, env, "", "run", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "is not in one")
	require.Contains(t, errOut, "--empty")
	code, _, errOut = runEnv(t, env, "", "run", "--empty", "--repo", repo, "fix the typo")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "not both")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(data)
}

func TestCLIFailuresAreClear(t *testing.T) {
	// Unknown subcommands fail.
	code, _, errOut := run(t, "", "sessions", "bogus")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown command "bogus"`)
	code, _, _ = run(t, "", "bogus")
	require.NotEqual(t, 0, code)

	// Following a session on a server that is not there gives up.
	old := client.ReconnectFor
	client.ReconnectFor = time.Second
	defer func() { client.ReconnectFor = old }()
	start := time.Now()
	code, _, errOut = runEnv(t, map[string]string{"PADDOCK_SERVER": "http://127.0.0.1:1"}, "", "sessions", "logs", "-f", "some-id")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cannot reach the paddock server")
	require.Less(t, time.Since(start), 30*time.Second)

	// A provider key set here but not on the server: the error says where it belongs.
	code, _, errOut = runEnv(t, map[string]string{"PADDOCK_SERVER": serverURL, "ANTHROPIC_API_KEY": "sk-here"}, "", "run", "--model", "anthropic/claude-x", "hi")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "environment of `paddock serve`")

	// End of input at an approval prompt is no decision, with how to decide.
	code, out, errOut := run(t, "", "run", "--empty", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, errOut, "no decision")
	require.Contains(t, errOut, "paddock approvals approve approval-")

	// sessions ls says when its limit cut rows.
	c := client.New(serverURL).WithToken(adminToken)
	for range 2 {
		_, err := c.Sessions().Create(context.Background(), wire.CreateRequest{Model: "replay/demo"})
		require.NoError(t, err)
	}
	code, out, _ = run(t, "", "sessions", "ls", "--limit", "1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "the newest 1 shown; there are more")
}

// TestMigrate: `paddock migrate` applies the store's migrations and says
// where the schema stands; a second run changes nothing; a database URL
// that is not PostgreSQL's is refused by name.
func TestMigrate(t *testing.T) {
	env := map[string]string{"PADDOCK_DATA_DIR": filepath.Join(t.TempDir(), "new")}
	code, out, errOut := runEnv(t, env, "", "migrate")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^the store is at schema version \d+ \(sqlite\)\n$`, out)
	code, again, errOut := runEnv(t, env, "", "migrate")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, out, again)
	env["PADDOCK_DATABASE_URL"] = "mysql://x"
	code, _, errOut = runEnv(t, env, "", "migrate")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "PADDOCK_DATABASE_URL: want a postgres:// URL")
}

// TestVersionAndTypos: paddock --version prints the version; a mistyped
// top-level command is a usage error (2), as in every command group.
func TestVersionAndTypos(t *testing.T) {
	code, out, _ := run(t, "", "--version")
	require.Equal(t, 0, code)
	require.Equal(t, "paddock "+cli.Version+"\n", out)
	code, _, errOut := run(t, "", "sesions", "ls")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown command "sesions"`)
}

// TestQuestionRefusesAnAnswerNotOffered: at the terminal, "maybe" to a
// yes/no question is asked again; a number picks an option.
func TestQuestionRefusesAnAnswerNotOffered(t *testing.T) {
	code, out, errOut := run(t, "y\nmaybe\n2\ny\n", "run", "--empty", "--model", "replay/demo", "fix the typo")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	require.Contains(t, out, `"maybe" is not one of the options`)
	require.Contains(t, out, "answer: changelog=no")
}
