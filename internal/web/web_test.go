package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// chromium is the headless browser the tests drive (Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no chromium: apt-get install chromium (.ci/run does)")
	return ""
}

// artifacts is where screenshots go: PADDOCK_ARTIFACTS, else a temporary
// directory.
func artifacts(t *testing.T) string {
	if d := os.Getenv("PADDOCK_ARTIFACTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		require.NoError(t, exec.Command("git", append([]string{"-C", dir}, args...)...).Run())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("Helo\n"), 0o644))
	require.NoError(t, exec.Command("git", "-C", dir, "add", ".").Run())
	require.NoError(t, exec.Command("git", "-C", dir, "commit", "-qm", "init").Run())
	return dir
}

// TestWebAppEndToEnd drives the web app in real headless Chromium: log in
// with a token, see the sessions list update without a reload, watch a
// session's transcript stream in, approve its call from the inbox, answer
// its question, approve the next call on the session page, and see it
// finish; every page keyboard-reachable, without console errors, and
// screenshotted at 1280×800. A user of another project sees none of it.
func TestWebAppEndToEnd(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	// The sandbox user reaches working copies under it.
	require.NoError(t, os.Chmod(dir, 0o711))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	a, err := app.Start(context.Background(), config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "webtester", LogLevel: slog.LevelWarn},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()
	token, err := os.ReadFile(filepath.Join(dir, engine.AdminTokenFile))
	require.NoError(t, err)
	admin := client.New(a.URL).WithToken(string(token))
	ctx := context.Background()
	x, err := admin.CreateSession(ctx, engine.CreateRequest{Model: "replay/demo", Repo: repo(t), Message: "fix the typo"})
	require.NoError(t, err)

	// Another project's user.
	require.NoError(t, admin.CreateProject(ctx, "elsewhere"))
	_, err = admin.CreateUser(ctx, "otto", false)
	require.NoError(t, err)
	require.NoError(t, admin.SetMember(ctx, "elsewhere", "otto", identity.Member))
	otto, err := admin.CreateToken(ctx, api.NewToken{User: "otto"})
	require.NoError(t, err)

	actx, cancelA := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck)
	defer cancelA()
	var mu sync.Mutex
	var consoleErrors []string
	bctx, cancelB := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				consoleErrors = append(consoleErrors, fmt.Sprint(e.Args))
			}
		case *runtime.EventExceptionThrown:
			consoleErrors = append(consoleErrors, e.ExceptionDetails.Text)
		}
	}))
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, 2*time.Minute)
	defer cancelT()
	out := artifacts(t)
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, name+".png"), png, 0o644)
		})
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(bctx, steps...), what)
	}
	text := func(sel chromedp.CSS) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(sel))
		require.NoError(t, err)
		return v
	}

	// Log in: the first page asks for a token; keyboard only.
	run("log in",
		chromedp.Navigate(a.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		shot("login"),
		chromedp.SendKeys(chromedp.ID("token"), strings.TrimSpace(string(token))+"\r"),
		chromedp.WaitVisible(chromedp.ID("rows")),
	)
	// The list updates without a reload: a session created now appears.
	y, err := admin.CreateSession(ctx, engine.CreateRequest{Model: "replay/demo", Repo: repo(t), Message: "a second one"})
	require.NoError(t, err)
	run("the new session appears without a reload",
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="`+y.ID+`"]`)),
		shot("sessions"),
	)
	// The session page streams its transcript.
	run("the transcript streams",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(., "look at the repository")]`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[@data-state="awaiting_approval"]`)),
		shot("session"),
	)
	// The inbox shows the call with its rule; approve it there.
	run("approve from the inbox",
		chromedp.Navigate(a.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.Search(`//article[contains(., "edit_file") and .//a[@href="/sessions/`+x.ID+`"]]`)),
		shot("inbox"),
		chromedp.Click(chromedp.Search(`//article[contains(., "edit_file") and .//a[@href="/sessions/`+x.ID+`"]]//button[@value="approve"]`)),
		chromedp.WaitNotPresent(chromedp.Search(`//article[.//a[@href="/sessions/`+x.ID+`"]]`)),
	)
	// The question: pick an option, answer (once the agent has asked).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		evs, err := admin.Events(ctx, x.ID, 0)
		require.NoError(t, err)
		if slices.ContainsFunc(evs, func(e session.Event) bool { return e.Kind == session.EventQuestion }) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the agent never asked")
		time.Sleep(100 * time.Millisecond)
	}
	run("answer the question",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID),
		chromedp.WaitVisible(chromedp.Search(`//form[contains(@class, "question")]`)),
		chromedp.Click(chromedp.Search(`//input[@type="radio" and @value="yes"]`)),
		chromedp.Click(chromedp.Search(`//form[contains(@class, "question")]//button`)),
	)
	// The next call waits for a decision on the session page itself.
	run("approve on the session page",
		chromedp.WaitVisible(chromedp.Search(`//p[@id="waiting"]/a`)),
		chromedp.Click(chromedp.Search(`//p[@id="waiting"]/a`)),
		chromedp.WaitVisible(chromedp.Search(`//article[contains(., "write_file")]//button[@value="approve"]`)),
		chromedp.Click(chromedp.Search(`//article[contains(., "write_file")]//button[@value="approve"]`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(., "Review the diff")]`)),
		shot("session-done"),
	)
	run("hold and release",
		chromedp.SendKeys(chromedp.ID("reason"), "inspecting"),
		chromedp.Click(chromedp.Search(`//form[contains(@action, "/hold")]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//form[contains(@action, "/release")]//button`)),
	)
	held, err := admin.Session(ctx, x.ID)
	require.NoError(t, err)
	require.True(t, held.Held(), "held from the page")
	require.Equal(t, "webtester", held.Hold.By.ID)
	run("release", chromedp.Click(chromedp.Search(`//form[contains(@action, "/release")]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//form[contains(@action, "/hold")]//button`)))
	run("the diff, flagged files and all",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID+"/diff"),
		chromedp.WaitVisible(chromedp.Search(`//td/code[.="README.md"]`)),
		chromedp.WaitVisible(chromedp.Search(`//pre[contains(@class, "patch") and contains(., "+Hello")]`)),
		shot("diff"),
	)
	run("the audit view",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID+"/audit"),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class, "verify") and contains(., "Verified")]`)),
		shot("audit"),
	)
	s, err := admin.Session(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, session.StatusAwaiting, s.Status)
	aps, err := admin.Approvals(ctx, store.ApprovalFilter{SessionID: x.ID})
	require.NoError(t, err)
	for _, ap := range aps {
		require.Equal(t, "webtester", ap.DecidedBy.ID, "decided in the browser, as the logged-in user")
	}

	// A guest's session waits at the door; the inbox lets it start.
	_, err = admin.CreateUser(ctx, "gwen", false)
	require.NoError(t, err)
	require.NoError(t, admin.SetMember(ctx, "default", "gwen", identity.Guest))
	gwen, err := admin.CreateToken(ctx, api.NewToken{User: "gwen"})
	require.NoError(t, err)
	g, err := client.New(a.URL).WithToken(gwen.Secret).CreateSession(ctx, engine.CreateRequest{Model: "replay/demo", Repo: repo(t), Message: "a guest's try"})
	require.NoError(t, err)
	run("let a guest's session start from the inbox",
		chromedp.Navigate(a.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.Search(`//li[contains(., "awaiting_start_approval")]//button[@value="approve"]`)),
		shot("inbox-start"),
		chromedp.Click(chromedp.Search(`//li[contains(., "awaiting_start_approval")]//button[@value="approve"]`)),
		chromedp.WaitNotPresent(chromedp.Search(`//li[contains(., "awaiting_start_approval")]`)),
	)
	parks, err := admin.Parks(ctx, g.ID)
	require.NoError(t, err)
	require.Len(t, parks, 1)
	require.Equal(t, "webtester", parks[0].ResolvedBy.ID, "the start approved in the browser")

	// Keyboard: the first Tab reaches the skip link.
	run("keyboard", chromedp.Navigate(a.URL+"/"), chromedp.WaitVisible(chromedp.ID("rows")), chromedp.KeyEvent("\t"))
	focused, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.activeElement.className`))
	require.NoError(t, err)
	require.Equal(t, "skip", focused)

	// Another project's user: none of it.
	run("log in as another project's user",
		chromedp.Click(chromedp.CSS(`.logout button`)),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), otto.Secret+"\r"),
		chromedp.WaitVisible(chromedp.ID("rows")),
	)
	body := text("main")
	require.NotContains(t, body, "fix the typo")
	require.Contains(t, body, "No sessions match.")
	run("a hidden session is not found", chromedp.Navigate(a.URL+"/sessions/"+x.ID), chromedp.WaitVisible(chromedp.CSS("main")))
	require.Contains(t, text("main"), "not found")

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, consoleErrors, "no console errors")
	t.Logf("screenshots in %s", out)
}
