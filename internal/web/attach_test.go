package web_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestComposerAttachesFiles drives the session page's composer in real
// headless Chromium: a screenshot picked with the file picker and a log
// dropped on the form are listed, sent with the message, and shown in
// the transcript (the image as a thumbnail the browser loaded, the log
// by name, type, size and digest); a file of a type not allowed is
// refused with the reason.
func TestComposerAttachesFiles(t *testing.T) {
	a, _, token, admin := server(t)
	ctx := context.Background()
	x, err := admin.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: repo(t)})
	require.NoError(t, err)

	files := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(2, 1, color.RGBA{200, 30, 30, 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	shotPath, elfPath := filepath.Join(files, "shot.png"), filepath.Join(files, "tool.png")
	require.NoError(t, os.WriteFile(shotPath, b.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(elfPath, append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...), 0o644))

	bctx := browser(t, 3*time.Minute)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, time.Minute)
		defer cancel()
		err := chromedp.Do(sctx, steps...)
		if err != nil {
			if shot, serr := chromedp.Run(bctx, chromedp.FullScreenshot(100)); serr == nil {
				_ = os.WriteFile(filepath.Join(artifacts(t), "attach-failed.png"), shot, 0o644)
			}
		}
		require.NoError(t, err, what)
	}
	until := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](js))
			return err
		})
	}
	run("log in",
		chromedp.Navigate(a.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), strings.TrimSpace(token)+"\r"),
		chromedp.WaitVisible(chromedp.ID("rows")),
	)
	run("pick a screenshot, drop a log, send",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID),
		chromedp.WaitVisible(chromedp.ID("attach")),
		chromedp.SetUploadFiles(chromedp.ID("attach"), []string{shotPath}),
		until(`document.querySelector("#attached").textContent.includes("shot.png")`),
		chromedp.Evaluate[chromedp.Void](`(() => {
			const dt = new DataTransfer();
			dt.items.add(new File(["build failed at step 3\n"], "build.log", {type: "text/plain"}));
			document.getElementById("composer").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
		})()`),
		until(`document.querySelector("#attached").textContent.includes("build.log") && document.getElementById("attach").files.length === 2`),
		chromedp.SendKeys(chromedp.ID("message"), "why is the page blank?"),
		chromedp.Click(chromedp.Search(`//form[@id="composer"]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//ol[@id="transcript"]/li[contains(., "why is the page blank?")]//ul[@class="attachments"]`)),
		until(`(() => { const i = document.querySelector("#transcript .attachments img"); return !!i && i.complete && i.naturalWidth === 4 })()`),
		chromedp.WaitVisible(chromedp.Search(`//ul[@class="attachments"]/li[contains(., "build.log") and contains(., "text/plain") and contains(., "sha256")]`)),
	)
	got, err := admin.Attachments(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "shot.png", got[0].Name)
	require.Equal(t, session.AttachmentImage, got[0].Kind)
	require.Equal(t, "build.log", got[1].Name)

	run("a file of a type not allowed is refused with the reason",
		chromedp.Navigate(a.URL+"/sessions/"+x.ID),
		chromedp.WaitVisible(chromedp.ID("attach")),
		chromedp.SetUploadFiles(chromedp.ID("attach"), []string{elfPath}),
		chromedp.SendKeys(chromedp.ID("message"), "and this one"),
		chromedp.Click(chromedp.Search(`//form[@id="composer"]//button`)),
		chromedp.WaitVisible(chromedp.Search(`//main[contains(., "tool.png: its content is application/x-elf, not an allowed type")]`)),
	)
	got, err = admin.Attachments(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, got, 2, "nothing bound")
}
