package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/wire"
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

// server starts a Paddock of its own for a test, on a data directory
// under which the sandbox's user reaches working copies: it, the
// directory, its first administrator's token and a client sending it.
func server(t *testing.T) (*app.App, string, string, *client.Client) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o711))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o711))
	a, err := app.Start(context.Background(), config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "webtester", LogLevel: slog.LevelWarn},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	t.Cleanup(a.Stop)
	token, err := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	require.NoError(t, err)
	return a, dir, string(token), client.New(a.URL).WithToken(string(token))
}

// browser starts headless Chromium at 1280×800 for the test, its tab
// (opts: a listener) ending after limit. The browser starts on the test's
// context: a step's own deadline, ending, must not close it.
func browser(t *testing.T, limit time.Duration, opts ...chromedp.ContextOption) context.Context {
	t.Helper()
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx, opts...)
	t.Cleanup(cancelB)
	bctx, cancelT := context.WithTimeout(bctx, limit)
	t.Cleanup(cancelT)
	require.NoError(t, chromedp.Do(bctx))
	return bctx
}

// TestWebAppEndToEnd drives the web app in real headless Chromium: log in
// with a token, see the sessions list update without a reload, watch a
// session's transcript stream in, approve its call from the inbox, answer
// its question, approve the next call on the session page, and see it
// finish; every page keyboard-reachable, without console errors, and
// screenshotted at 1280×800. A user of another project sees none of it.
func TestWebAppEndToEnd(t *testing.T) {
	a, dir, token, admin := server(t)
	ctx := context.Background()
	origin := repo(t)

	// Another project's user.
	require.NoError(t, admin.Access().CreateProject(ctx, "elsewhere"))
	_, err := admin.Access().CreateUser(ctx, "otto", false)
	require.NoError(t, err)
	require.NoError(t, admin.Access().SetMember(ctx, "elsewhere", "otto", identity.Member))
	otto, err := admin.Access().CreateToken(ctx, wire.NewToken{User: "otto"})
	require.NoError(t, err)

	var mu sync.Mutex
	var consoleErrors []string
	bctx := browser(t, 5*time.Minute, chromedp.WithListener(func(ev any) {
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
		sctx, cancel := context.WithTimeout(bctx, time.Minute)
		defer cancel()
		err := chromedp.Do(sctx, steps...)
		if err != nil {
			// What the browser showed when the step failed.
			if png, serr := chromedp.Run(bctx, chromedp.FullScreenshot(100)); serr == nil {
				_ = os.WriteFile(filepath.Join(out, "failed.png"), png, 0o644)
			}
		}
		require.NoError(t, err, what)
	}
	// until waits for a script's condition to hold.
	until := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](js))
			return err
		})
	}
	// usable checks the page for the keyboard: every control reachable by
	// Tab and named (a label, its text, or an aria-label).
	usable := func(page string) {
		t.Helper()
		bad, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](unusable))
		require.NoError(t, err)
		require.Empty(t, bad, "controls of the %s page a keyboard user cannot reach or cannot tell apart", page)
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
	usable("sessions")
	// Start a session from the browser.
	run("start a session",
		chromedp.Navigate(a.URL+"/new"),
		chromedp.WaitVisible(chromedp.ID("new-repo")),
		chromedp.SendKeys(chromedp.ID("new-repo"), origin),
		chromedp.SendKeys(chromedp.ID("new-message"), "fix the typo"),
		shot("new"),
	)
	usable("new session")
	run("submit", chromedp.Click(chromedp.Search(`//form[@action="/new"]//button`)), chromedp.WaitVisible(chromedp.ID("transcript")))
	loc, err := chromedp.Run(bctx, chromedp.Location())
	require.NoError(t, err)
	xid, ok := strings.CutPrefix(loc, a.URL+"/sessions/")
	require.True(t, ok, "the new session's page: %s", loc)
	x, err := admin.Sessions().Get(ctx, xid)
	require.NoError(t, err)
	require.Equal(t, "webtester", x.CreatedBy.ID, "started by the logged-in user")
	require.Equal(t, origin, x.Repo)
	run("back to the list", chromedp.Navigate(a.URL+"/"), chromedp.WaitVisible(chromedp.ID("rows")))
	// The list updates without a reload: a session created now appears.
	y, err := admin.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: repo(t), Message: "a second one"})
	require.NoError(t, err)
	run("the new session appears without a reload",
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="`+y.ID+`"]`)),
		shot("sessions"),
	)
	run("search as you type",
		chromedp.SendKeys(chromedp.ID("q"), "second"),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-id="`+x.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-id="`+y.ID+`"]`)),
		until(`document.activeElement.id === "q" && location.search.includes("q=second")`),
	)
	// The session page streams its transcript.
	run("the transcript streams",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(., "look at the repository")]`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[@data-state="awaiting_approval"]`)),
		shot("session"),
	)
	usable("session")
	// The inbox shows the call with its rule; approve it there.
	run("approve from the inbox",
		chromedp.Navigate(a.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.Search(`//article[contains(., "edit_file") and .//a[@href="/sessions/`+x.ID+`"]]`)),
		shot("inbox"),
		chromedp.Func(func(context.Context, *chromedp.Target) error { usable("inbox"); return nil }),
	)
	// By keyboard: j moves from call to call, a approves the one in focus.
	for i := 0; ; i++ {
		require.Less(t, i, 10, "j never reached the session's call")
		run("j", chromedp.KeyEvent("j"))
		href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.activeElement.closest("article")?.querySelector("a[href^='/sessions/']")?.getAttribute("href") || ""`))
		require.NoError(t, err)
		if href == "/sessions/"+x.ID {
			break
		}
	}
	run("a approves it",
		chromedp.KeyEvent("a"),
		chromedp.WaitNotPresent(chromedp.Search(`//article[.//a[@href="/sessions/`+x.ID+`"]]`)),
	)
	// An agent's message is laid out, never interpreted: markup stays
	// text, only http(s) links become links.
	run("a page with the app's script", chromedp.Navigate(a.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS("main h1")), until(`typeof markdown === "function"`))
	md, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
		const d = document.createElement("div");
		d.append(markdown("# Plan\n- **fix** the `+"`typo`"+`\n- see [docs](https://example.com/x) and [bad](javascript:alert(1))\n<img src=x onerror=alert(1)><script>alert(2)</script>\n`+"```"+`\n<b>code</b>\n`+"```"+`"));
		return [String(d.querySelectorAll("img, script, b").length), d.querySelector("strong").textContent, d.querySelector("code").textContent,
			String([...d.querySelectorAll("a")].map((a) => a.href)), d.querySelector("pre").textContent, d.textContent.includes("<img src=x") ? "kept" : "lost"];
	})()`))
	require.NoError(t, err)
	require.Equal(t, []string{"0", "fix", "typo", "https://example.com/x", "<b>code</b>", "kept"}, md)
	// Text from an agent or a command shows what would hide or move it.
	marks, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
		const d = el("pre", "", "if isAdmin \u202e } \u2066// \u2069 { ok\u200b\u200b\u200b");
		return [d.textContent, String(d.querySelectorAll(".hidden-char").length)];
	})()`))
	require.NoError(t, err)
	require.Equal(t, "if isAdmin U+202E } U+2066// U+2069 { okU+200B ×3", marks[0])
	require.Equal(t, "4", marks[1])
	// Live controls: a call that comes to wait appears on an open page,
	// and one decided elsewhere (the API) leaves it, each within 2 s.
	z, err := admin.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: repo(t), Message: "a third one"})
	require.NoError(t, err)
	run("a session page open before its call waits",
		chromedp.Navigate(a.URL+"/sessions/"+z.ID),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	)
	present, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#controls article.approval").length`))
	require.NoError(t, err)
	var zap session.Approval
	zdeadline := time.Now().Add(2 * time.Minute)
	for {
		aps, err := admin.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: z.ID, Status: session.ApprovalPending})
		require.NoError(t, err)
		if len(aps) > 0 {
			zap = aps[0]
			break
		}
		require.True(t, time.Now().Before(zdeadline), "the third session's call never waited")
		time.Sleep(20 * time.Millisecond)
	}
	waited := time.Now()
	run("the waiting call appears", chromedp.WaitVisible(chromedp.Search(`//div[@id="controls"]//article[contains(., "edit_file")]`)))
	if present == 0 {
		require.Less(t, time.Since(waited), 2*time.Second, "a call that waits appears on the open page within 2 s")
	}
	_, err = admin.Gates().Decide(ctx, zap.ID, true, "decided elsewhere")
	require.NoError(t, err)
	decidedAt := time.Now()
	run("the call decided elsewhere leaves the page", chromedp.WaitNotPresent(chromedp.Search(`//div[@id="controls"]//article[contains(., "edit_file")]`)))
	require.Less(t, time.Since(decidedAt), 2*time.Second, "a call decided elsewhere leaves the open page within 2 s")
	// The finished call keeps what it did and who let it: the edit, and
	// the approver's note.
	run("a finished call shows its edit and its approver's note",
		chromedp.WaitVisible(chromedp.Search(`//li[@data-state="done" and .//span[@class="who" and .="edit_file"]]//p[contains(@class, "call-note") and contains(., "decided elsewhere")]`)),
		chromedp.WaitVisible(chromedp.Search(`//li[@data-state="done" and .//span[@class="who" and .="edit_file"]]//pre[contains(@class, "call-edit")]/span[@class="add" and contains(., "Hello")]`)),
		chromedp.WaitVisible(chromedp.Search(`//li[@data-state="done" and .//span[@class="who" and .="edit_file"]]//p[@class="call-path"]/code[.="README.md"]`)),
		shot("session-calls"),
	)
	stopZ, _ := json.Marshal(session.StopPayload{Reason: "enough"})
	_, err = admin.Sessions().Send(ctx, z.ID, wire.SendRequest{Kind: session.KindStop, Payload: stopZ})
	require.NoError(t, err)
	waitStatus(t, admin, z.ID, session.StatusStopped)
	// A session that fails says why on its page, with a way to retry.
	_, err = admin.Projects().Apply(ctx, []byte("name: broken\nmodel: replay/demo\ntools: [read_file]\nenvironment:\n  setup: |\n    echo preparing\n    echo 'npm ERR! network unreachable' >&2\n    exit 3\n"))
	require.NoError(t, err)
	f, err := admin.Sessions().Create(ctx, wire.CreateRequest{Agent: "broken", Repo: repo(t), Message: "doomed"})
	require.NoError(t, err)
	waitStatus(t, admin, f.ID, session.StatusFailed)
	failed, err := admin.Sessions().Get(ctx, f.ID)
	require.NoError(t, err)
	require.NotEmpty(t, failed.Error)
	run("a failed session shows why",
		chromedp.Navigate(a.URL+"/sessions/"+f.ID),
		chromedp.WaitVisible(chromedp.Search(`//section[contains(@class, "failure")]//pre[contains(., `+strconv.Quote(clipFirstLine(failed.Error))+`)]`)),
		chromedp.WaitVisible(chromedp.Search(`//section[contains(@class, "failure")]//form[contains(@action, "/retry")]//button`)),
		shot("session-failed"),
	)
	// The question: pick an option, answer (once the agent has asked).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		evs, err := admin.Sessions().Events(ctx, x.ID, 0)
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
	run("approve on the session page, the call appearing without a reload",
		chromedp.WaitVisible(chromedp.Search(`//article[contains(., "write_file")]//button[@value="approve"]`)),
		// Enter in the note decides nothing (neither rejects nor approves);
		// the note goes with the button pressed next.
		// (Had Enter submitted the form, the page would have reloaded
		// without the call: the click below would find no Approve.)
		chromedp.SendKeys(chromedp.Search(`//article[contains(., "write_file")]//input[@name="note"]`), "looks fine\r"),
		chromedp.Click(chromedp.Search(`//article[contains(., "write_file")]//button[@value="approve"]`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(., "Review the diff")]`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(@class, "answer") and contains(., "changelog: yes")]`)),
	)
	decided, err := admin.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID})
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(decided, func(ap session.Approval) bool {
		return ap.Tool == "write_file" && ap.Status == session.ApprovalApproved && ap.Note == "looks fine"
	}), "approved with the note typed before: %+v", decided)
	// The header follows the session without a reload: no longer waiting.
	pctx, cancelP := context.WithTimeout(bctx, time.Minute)
	_, err = chromedp.Run(pctx, chromedp.Poll[bool](`document.getElementById("status").textContent === "awaiting" && !document.getElementById("ambient").textContent.includes("waiting for")`))
	cancelP()
	require.NoError(t, err, "the session page's status and ambient line follow the session")
	run("the finished session", shot("session-done"))
	run("hold and release",
		chromedp.SendKeys(chromedp.ID("reason"), "inspecting"),
		chromedp.Click(chromedp.Search(`//form[contains(@action, "/hold")]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//form[contains(@action, "/release")]//button`)),
	)
	held, err := admin.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.True(t, held.Held(), "held from the page")
	require.Equal(t, "webtester", held.Hold.By.ID)
	run("release", chromedp.Click(chromedp.Search(`//form[contains(@action, "/release")]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//form[contains(@action, "/hold")]//button`)))
	// Keyboard alone: Tab to the composer, type, Tab to Send, Enter.
	run("keyboard to the composer", chromedp.Navigate(a.URL+"/sessions/"+x.ID), chromedp.WaitVisible(chromedp.ID("message")))
	for i := 0; ; i++ {
		require.Less(t, i, 80, "Tab never reached the composer")
		run("tab", chromedp.KeyEvent("\t"))
		id, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.activeElement.id`))
		require.NoError(t, err)
		if id == "message" {
			break
		}
	}
	run("type and send with the keyboard",
		chromedp.KeyEvent("thanks, that is all"),
		chromedp.KeyEvent("\t"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(., "thanks, that is all")]`)),
	)
	waitStatus(t, admin, x.ID, session.StatusAwaiting)
	run("the diff, flagged files and all",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID+"/diff"),
		chromedp.WaitVisible(chromedp.Search(`//td/a/code[.="README.md"]`)),
		chromedp.WaitVisible(chromedp.Search(`//details[contains(@class, "file")]//tr[@class="add"]/td[contains(@class, "code") and contains(., "Hello")]`)),
		shot("diff"),
	)
	usable("diff")
	// The hunks are coloured: an added line's background is not a
	// context line's, nor a deleted one's.
	colours, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`["add", "del", "ctx"].map((k) => { const c = document.querySelector("td.code." + k); return c ? getComputedStyle(c).backgroundColor : "" })`))
	require.NoError(t, err)
	require.Len(t, colours, 3)
	require.NotEmpty(t, colours[0], "an added line")
	require.NotEmpty(t, colours[1], "a deleted line")
	require.NotEqual(t, colours[0], colours[1])
	require.NotEqual(t, colours[0], colours[2])
	// A file collapses by its header, and opens again.
	run("collapse a file",
		chromedp.Click(chromedp.Search(`//details[contains(@class, "file")][.//code[.="README.md"]]/summary`)),
		until(`![...document.querySelectorAll("details.file")].find((d) => d.querySelector("summary code").textContent === "README.md").open`),
		chromedp.Click(chromedp.Search(`//details[contains(@class, "file")][.//code[.="README.md"]]/summary`)),
		until(`[...document.querySelectorAll("details.file")].find((d) => d.querySelector("summary code").textContent === "README.md").open`),
	)
	// Reject asks first; keeping the changes returns to the review intact.
	run("reject asks for confirmation",
		chromedp.Click(chromedp.Search(`//a[contains(@href, "/reject")]`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[contains(., "Reject the changes")]`)),
		chromedp.WaitVisible(chromedp.Search(`//form[contains(@action, "/reject")]//button`)),
		shot("reject"),
		chromedp.Click(chromedp.Search(`//a[contains(., "Keep them")]`)),
		chromedp.WaitVisible(chromedp.Search(`//tr[@class="add"]/td[contains(., "Hello")]`)),
	)
	run("accept it as a branch of the repository of origin",
		chromedp.Click(chromedp.Search(`//form[contains(@action, "/accept")]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class, "notice") and contains(., "branch paddock/`+x.ID+`")]`)),
	)
	branch := "paddock/" + x.ID
	show, err := exec.Command("git", "-C", origin, "show", branch+":README.md").CombinedOutput()
	require.NoError(t, err, string(show))
	require.Equal(t, "Hello\n", string(show), "the accepted change is on the branch")
	msg, err := exec.Command("git", "-C", origin, "log", "-1", "--format=%B", branch).CombinedOutput()
	require.NoError(t, err, string(msg))
	require.Contains(t, string(msg), "Paddock-Session: "+x.ID)
	require.Contains(t, string(msg), "Accepted-By: operator:webtester")
	st, err := exec.Command("git", "-C", origin, "status", "--porcelain").CombinedOutput()
	require.NoError(t, err)
	require.Empty(t, string(st), "the checkout is not touched")
	accepted, err := admin.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.NotEqual(t, x.BaseCommit, accepted.BaseCommit, "the accepted snapshot is the copy's new base")
	run("after acceptance, nothing is left to review",
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class, "empty") and contains(., "Nothing to review")]`)),
	)
	gone, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("a[href$='/reject'], form[action$='/accept']").length`))
	require.NoError(t, err)
	require.Zero(t, gone, "no accept or reject of nothing")
	run("the audit view",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID+"/audit"),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class, "verify") and contains(., "Verified")]`)),
		shot("audit"),
	)
	usable("audit")
	// Every page at a desktop's size and a phone's, light and dark: a
	// screenshot of each, and no page wider than a phone's screen.
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		for _, scheme := range []string{"light", "dark"} {
			for _, pg := range []struct{ name, path string }{
				{"sessions", "/"}, {"session", "/sessions/" + x.ID}, {"diff", "/sessions/" + x.ID + "/diff"},
				{"audit", "/sessions/" + x.ID + "/audit"}, {"inbox", "/inbox"}, {"admin", "/admin"}, {"new", "/new"}, {"notfound", "/no/such/page"},
			} {
				run("the "+pg.name+" page, "+scheme+", "+fmt.Sprint(size[0]),
					chromedp.EmulateViewport(size[0], size[1]),
					chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
						_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
						return err
					}),
					chromedp.Navigate(a.URL+pg.path),
					chromedp.WaitVisible(chromedp.CSS("main h1")),
					shot(fmt.Sprintf("%s-%dx%d-%s", pg.name, size[0], size[1], scheme)),
				)
				low, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](lowContrast))
				require.NoError(t, err)
				require.Empty(t, low, "text on the %s page (%s) below WCAG AA contrast", pg.name, scheme)
				wide, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
				require.NoError(t, err)
				require.LessOrEqual(t, wide[0], wide[1], "the %s page is wider (%d px) than the %d px screen (%s)", pg.name, wide[0], wide[1], scheme)
				if scheme == "dark" {
					bg, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
					require.NoError(t, err)
					require.Equal(t, "rgb(15, 20, 27)", bg, "the %s page follows the dark scheme", pg.name)
				}
			}
		}
	}
	run("back to the desktop", chromedp.EmulateViewport(1280, 800), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		return err
	}))
	s, err := admin.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, session.StatusAwaiting, s.Status)
	aps, err := admin.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID})
	require.NoError(t, err)
	for _, ap := range aps {
		require.Equal(t, "webtester", ap.DecidedBy.ID, "decided in the browser, as the logged-in user")
	}

	// A guest's session waits at the door; the inbox lets it start.
	_, err = admin.Access().CreateUser(ctx, "gwen", false)
	require.NoError(t, err)
	require.NoError(t, admin.Access().SetMember(ctx, "default", "gwen", identity.Guest))
	gwen, err := admin.Access().CreateToken(ctx, wire.NewToken{User: "gwen"})
	require.NoError(t, err)
	g, err := client.New(a.URL).WithToken(gwen.Secret).Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Message: "a guest's try"})
	require.NoError(t, err)
	run("let a guest's session start from the inbox",
		chromedp.Navigate(a.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.Search(`//li[contains(., "waits for a member to let it start")]//button[@value="approve"]`)),
		shot("inbox-start"),
		chromedp.Click(chromedp.Search(`//li[contains(., "waits for a member to let it start")]//button[@value="approve"]`)),
		chromedp.WaitNotPresent(chromedp.Search(`//li[contains(., "waits for a member to let it start")]`)),
	)
	parks, err := admin.Gates().Parks(ctx, g.ID)
	require.NoError(t, err)
	require.Len(t, parks, 1)
	require.Equal(t, "webtester", parks[0].ResolvedBy.ID, "the start approved in the browser")

	// The administrator's console: users, tokens, members, policy replay.
	run("the console", chromedp.Navigate(a.URL+"/admin"), chromedp.WaitVisible(chromedp.ID("user-name")), shot("admin"))
	usable("admin")
	run("create a user",
		chromedp.SendKeys(chromedp.ID("user-name"), "rita\r"),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class, "notice") and contains(., "user rita created")]`)),
		chromedp.Click(chromedp.Search(`//form[@action="/admin/users/rita/revoke"]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//p[contains(@class, "notice") and contains(., "user rita revoked")]`)),
	)
	users, err := admin.Access().Users(ctx)
	require.NoError(t, err)
	ri := slices.IndexFunc(users, func(u identity.User) bool { return u.Name == "rita" })
	require.GreaterOrEqual(t, ri, 0)
	require.NotNil(t, users[ri].RevokedAt, "revoked from the console")
	run("mint a token", chromedp.SendKeys(chromedp.ID("token-label"), "laptop\r"), chromedp.WaitVisible(chromedp.ID("minted-token")))
	minted := strings.TrimSpace(text("#minted-token"))
	who, err := client.New(a.URL).WithToken(minted).Access().Whoami(ctx)
	require.NoError(t, err, "the token shown once works")
	require.Equal(t, "webtester", who.User)
	run("a project's members",
		chromedp.Navigate(a.URL+"/admin/projects/elsewhere"),
		chromedp.WaitVisible(chromedp.Search(`//td[.="otto"]`)),
		chromedp.SendKeys(chromedp.ID("member-user"), "gwen"),
		chromedp.SetValue(chromedp.ID("member-role"), "viewer"),
		chromedp.Click(chromedp.Search(`//form[@action="/admin/projects/elsewhere/members"]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//tr[td[.="gwen"] and td[.="viewer"]]`)),
	)
	usable("project")
	run("replay a stricter policy on what was recorded",
		chromedp.Navigate(a.URL+"/admin/projects/default"),
		chromedp.WaitVisible(chromedp.ID("policy-in-force")),
		chromedp.SetValue(chromedp.ID("candidate"), "default: disabled\n"),
		chromedp.Click(chromedp.Search(`//form[contains(@action, "/replay")]//button[not(@formaction)]`)),
		chromedp.WaitVisible(chromedp.ID("replay")),
		shot("policy-replay"),
	)
	replayed := text("#replay")
	require.NotContains(t, replayed, "No recorded call would be judged differently", "the calls approved before would now be refused")
	require.Contains(t, replayed, "would change")

	// Keyboard: the first Tab reaches the skip link.
	run("keyboard", chromedp.Navigate(a.URL+"/"), chromedp.WaitVisible(chromedp.ID("rows")), chromedp.KeyEvent("\t"))
	focused, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.activeElement.className`))
	require.NoError(t, err)
	require.Equal(t, "skip", focused)

	// A long session: 1,000 events (500 commands with their output, 500
	// messages), served and drawn, timed as a person waits for them. The
	// figures are recorded (README), not asserted: a busy machine is slow.
	longStore, err := sqlstore.Open(ctx, filepath.Join(dir, "paddock.db"), nil)
	require.NoError(t, err)
	out20 := strings.Repeat("ok  \texample.com/pkg\t0.012s\n", 20)
	for i := range 500 {
		call, _ := json.Marshal(session.ToolCallData{ID: fmt.Sprintf("bench-%d", i), Name: "run_command", State: session.CallDone, Args: json.RawMessage(`{"command":"go test ./..."}`), Result: out20})
		_, err := longStore.AppendEvent(ctx, session.Event{SessionID: y.ID, Kind: session.EventToolCall, Key: fmt.Sprintf("bench/call/%d", i), Data: call})
		require.NoError(t, err)
		text, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("Step %d: the tests pass; next I look at the **parser**.", i)})
		_, err = longStore.AppendEvent(ctx, session.Event{SessionID: y.ID, Kind: "assistant_text", Key: fmt.Sprintf("bench/text/%d", i), Data: text})
		require.NoError(t, err)
	}
	require.NoError(t, longStore.Close())
	served := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/sessions/"+y.ID, nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: api.TokenCookie, Value: strings.TrimSpace(string(token))})
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	server := time.Since(served)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	run("a 1,000-event session drawn",
		chromedp.Navigate(a.URL+"/sessions/"+y.ID),
		until(`document.querySelectorAll("#transcript li").length >= 1000`),
	)
	timing, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`[performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd, performance.now()]`))
	require.NoError(t, err)
	t.Logf("a 1,000-event session: the page served in %v, DOMContentLoaded at %.0f ms, every event drawn by %.0f ms", server.Round(time.Millisecond), timing[0], timing[1])

	// A 5,000-line diff: five new Go files of 1,000 lines in the working
	// copy, reviewed through the page (its first page of whole files).
	yx, err := admin.Sessions().Get(ctx, y.ID)
	require.NoError(t, err)
	require.NotEmpty(t, yx.Workdir)
	for i := range 5 {
		var src strings.Builder
		src.WriteString("package big\n")
		for j := 1; j < 1000; j++ {
			fmt.Fprintf(&src, "func f%d_%d() string { return \"value %d\" } // line %d\n", i, j, j, j)
		}
		require.NoError(t, os.WriteFile(filepath.Join(yx.Workdir, fmt.Sprintf("big%d.go", i)), []byte(src.String()), 0o644))
	}
	page := func(path string) time.Duration {
		t.Helper()
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+path, nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: api.TokenCookie, Value: strings.TrimSpace(string(token))})
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return time.Since(start)
	}
	page("/sessions/" + y.ID + "/diff") // the first diff of new files fills git's caches
	diffServed := page("/sessions/" + y.ID + "/diff")
	run("a 5,000-line diff reviewed",
		chromedp.Navigate(a.URL+"/sessions/"+y.ID+"/diff"),
		chromedp.WaitVisible(chromedp.ID("f1")),
	)
	dcl, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`[performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd, document.querySelectorAll("table.hunk tr").length]`))
	require.NoError(t, err)
	t.Logf("a 5,000-line diff: its first page (%.0f lines) served in %v, DOMContentLoaded at %.0f ms", dcl[1], diffServed.Round(time.Millisecond), dcl[0])
	require.Greater(t, dcl[1], 1500.0, "the first page holds whole files")
	// The review's colours (hunks, highlighted code) hold AA contrast in
	// both schemes.
	for _, scheme := range []string{"light", "dark"} {
		run("the review in "+scheme, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}), shot("diff-long-"+scheme))
		low, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](lowContrast))
		require.NoError(t, err)
		require.Empty(t, low, "the review's text below WCAG AA contrast (%s)", scheme)
	}
	run("light again", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		return err
	}))

	// A delegation: the parent's transcript links its child and says
	// when the child waits; the inbox names the chain; approved there,
	// the child's report comes back to the parent's call.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "replay"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "replay", "child.yaml"), []byte(`steps:
  - toolCalls:
      - name: write_file
        args: {path: from-child.txt, content: "child\n"}
  - text: "The child wrote it."
`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "replay", "parent.yaml"), []byte(`steps:
  - toolCalls:
      - name: delegate
        args: {task: "write from-child.txt", model: replay/child.yaml}
  - text: "Delegated and back."
`), 0o600))
	px, err := admin.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/parent.yaml", Repo: repo(t), Message: "delegate it"})
	require.NoError(t, err)
	run("the parent's transcript says its child waits",
		chromedp.Navigate(a.URL+"/sessions/"+px.ID),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(@class, "child-approval") and contains(., "write_file waits for approval in a delegated session")]`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]//p[contains(@class, "call-child")]/a`)),
		shot("delegating"),
	)
	run("the inbox names the chain; approve the child's call",
		chromedp.Navigate(a.URL+"/inbox"),
		chromedp.WaitVisible(chromedp.Search(`//article[.//p[@class="chain" and contains(., "to write from-child.txt")]//a[@href="/sessions/`+px.ID+`"]]`)),
		shot("inbox-chain"),
		chromedp.Click(chromedp.Search(`//article[.//p[@class="chain"]//a[@href="/sessions/`+px.ID+`"]]//button[@value="approve"]`)),
	)
	deadline = time.Now().Add(2 * time.Minute)
	for {
		turns, err := admin.Sessions().Turns(ctx, px.ID)
		require.NoError(t, err)
		if len(turns) == 1 && turns[0].Status.Settled() {
			require.Equal(t, session.TurnCompleted, turns[0].Status, turns[0].Error)
			break
		}
		if time.Now().After(deadline) {
			pending, _ := admin.Gates().Approvals(ctx, session.ApprovalFilter{Status: session.ApprovalPending})
			t.Fatalf("the parent's turn never settled; pending approvals: %+v", pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
	run("the child's report comes back to the parent",
		chromedp.Navigate(a.URL+"/sessions/"+px.ID),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[@data-state="done" and contains(., "The child wrote it.")]`)),
		chromedp.WaitVisible(chromedp.Search(`//section[.//h2[@id="started-h"]]//a`)),
		shot("delegated"),
	)

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

// unusable lists the page's controls a keyboard user cannot reach (taken
// out of the tab order) or cannot tell apart (no label, text or name).
const unusable = `[...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea')].filter(e => {
  if (e.hidden) return false; // not shown, not a control (a form's disabled default button)
  if (e.tabIndex < 0 || e.disabled) return true;
  const named = e.getAttribute('aria-label') || (e.labels && [...e.labels].some(l => l.textContent.trim())) || e.textContent.trim();
  return !named;
}).map(e => e.outerHTML.slice(0, 120))`

// clipFirstLine is the start of an error's first line (an XPath literal
// without quotes or newlines).
func clipFirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.Map(func(r rune) rune {
		if r == '"' || r == '\'' {
			return -1
		}
		return r
	}, s)
	return s[:min(40, len(s))]
}

func waitStatus(t *testing.T, c *client.Client, id string, want session.Status) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		x, err := c.Sessions().Get(context.Background(), id)
		require.NoError(t, err)
		if x.Status == want {
			return
		}
		require.True(t, time.Now().Before(deadline), "session %s stayed %s, want %s", id, x.Status, want)
		time.Sleep(50 * time.Millisecond)
	}
}

// lowContrast lists the page's text whose contrast with what is behind it
// is below WCAG AA (4.5:1; 3:1 for large text), with the two colours.
const lowContrast = `(() => {
	const rgb = (c) => { const m = c.match(/[\d.]+/g); return m ? m.map(Number) : [0, 0, 0, 0]; };
	const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
	const behind = (e) => {
		for (let n = e; n; n = n.parentElement) {
			const c = rgb(getComputedStyle(n).backgroundColor);
			if (c.length < 4 || c[3] > 0) return c;
		}
		return rgb(getComputedStyle(document.body).backgroundColor);
	};
	const out = [];
	const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let t; (t = walker.nextNode());) {
		if (!t.textContent.trim()) continue;
		const e = t.parentElement;
		const st = getComputedStyle(e);
		if (st.visibility === "hidden" || st.display === "none" || e.closest("[hidden], details:not([open]) > :not(summary)") || !e.getClientRects().length) continue;
		const fg = rgb(st.color), bg = behind(e);
		const a = fg.length > 3 ? fg[3] : 1;
		const mixed = fg.slice(0, 3).map((v, i) => v * a + bg[i] * (1 - a));
		const l1 = lum(mixed), l2 = lum(bg), ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
		const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
		const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
		if (ratio < need) out.push(e.tagName.toLowerCase() + "." + e.className + " " + JSON.stringify(t.textContent.trim().slice(0, 30)) + " " + st.color + " on " + "rgb(" + bg.slice(0, 3).join(", ") + ") = " + ratio.toFixed(2));
	}
	return [...new Set(out)].slice(0, 20);
})()`
