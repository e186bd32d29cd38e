package app_test

// The attacks of the attachments' security review, through the API:
// each TestAttack* reproduces a weakness the review found (they pass
// since it was repelled); TestHeld* record attacks that held.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// A file named " .." (a name any client, the web form or Slack may
// give) is named "..": placed at .paddock/attachments/.., i.e. the file
// .paddock, in place of the attachments directory. It shows up in the
// session's diff (only .paddock/attachments is left out), and the next
// model step cannot place the session's files: the session breaks.
func TestAttackDotDotNameEscapesIntoTheDiff(t *testing.T) {
	ctx := context.Background()
	srv := openAIServer(t, providertest.Reply{SSE: providertest.OpenAIStream("Seen.")},
		providertest.Reply{SSE: providertest.OpenAIStream("Seen again.")})
	a := upload(t, "default", " ..", []byte("this file was an attachment\n"))
	assert.NotEqual(t, "..", a.Name, "the name is a parent-directory reference")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "openai/gpt-4o", Repo: gitRepo(t), Message: "read it",
		Attachments: []session.AttachmentRef{{ID: a.ID}}})
	require.NoError(t, err)
	defer send(t, x.ID, session.KindStop, session.StopPayload{})
	approveTurns(t, x.ID, 1, "")
	x, err = api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	fi, err := os.Lstat(filepath.Join(x.Workdir, ".paddock"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), ".paddock is a %v: the attachment replaced the attachments directory", fi.Mode())
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	for _, f := range d.Files {
		assert.False(t, f.Path == ".paddock" || strings.HasPrefix(f.Path, ".paddock/"), "an attachment is in the diff: %s", f.Path)
	}
	// The next message's step must still place the session's files.
	other := upload(t, "default", "second.txt", []byte("second\n"))
	require.NoError(t, sendWith(x.ID, "and this", session.AttachmentRef{ID: other.ID}))
	approveTurns(t, x.ID, 2, "")
	turns, err := api.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	t.Logf("turn 2: %s; model calls %d", turns[1].Status, len(srv.Requests))
	_, err = os.Stat(filepath.Join(x.Workdir, session.AttachmentsDir, "second.txt"))
	assert.NoError(t, err, "the second message's file is not in the working copy")
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	for _, e := range events {
		if strings.Contains(string(e.Data), "attachments") && e.Kind != session.EventUserMessage {
			t.Logf("%s: %.300s", e.Kind, e.Data)
		}
	}
}

// Create under an idempotency key skips the "yours" check for an
// attachment already bound to a session (Resolve: the CreatedBy test is
// only for staged ones, and Retry lets any bound one through). Mallory
// names the admin's session's attachment: she gets a 409 instead of the
// 400, and a session of hers is recorded, its start payload carrying the
// other session's file (name, type, size, digest).
func TestAttackRetryKeyNamesAnotherSessionsAttachment(t *testing.T) {
	ctx := context.Background()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1") // never called
	theirs := upload(t, "default", "their-secret-plan.txt", []byte("the admin's notes\n"))
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: gitRepo(t)})
	require.NoError(t, err)
	defer send(t, x.ID, session.KindStop, session.StopPayload{})
	require.NoError(t, sendWith(x.ID, "look", session.AttachmentRef{ID: theirs.ID}))

	user := unique("zzmallory")
	member(t, "default", user, identity.Member)
	_, mallory := tokenOf(t, user)
	// Without a key: refused, as it should be.
	_, err = mallory.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Message: "mine now",
		Attachments: []session.AttachmentRef{{ID: theirs.ID}}})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "%v", err)
	// With a key: the same refusal is expected, and no session of hers.
	before, err := mallory.Sessions().List(ctx, session.Filter{})
	require.NoError(t, err)
	y, err := mallory.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Message: "mine now", IdempotencyKey: unique("k"),
		Attachments: []session.AttachmentRef{{ID: theirs.ID}}})
	assert.Error(t, err, "201 for a message naming another session's attachment: session %s", y.ID)
	if y.ID != "" {
		y, _ = mallory.Sessions().Get(ctx, y.ID)
		cmds, _ := mallory.Sessions().Commands(ctx, y.ID)
		for _, c := range cmds {
			t.Logf("her session %s (%s, %q): command %s payload %s", y.ID, y.Status, y.Error, c.Kind, c.Payload)
		}
	}
	after, err := mallory.Sessions().List(ctx, session.Filter{})
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after), "a session was recorded for a message naming another session's attachment")
	for _, s := range after {
		if strings.Contains(s.Input, "mine now") {
			t.Logf("recorded: session %s, status %s, error %q", s.ID, s.Status, s.Error)
		}
	}
}

// Upload checks the uploader's staged bytes, then inserts: concurrent
// uploads all pass the check, so the 100 MiB staged limit is exceeded.
func TestAttackStagedLimitRace(t *testing.T) {
	ctx := context.Background()
	user := unique("zzstager")
	member(t, "default", user, identity.Member)
	_, c := tokenOf(t, user)
	const n = 14
	size := 9 << 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var kept int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := append([]byte(fmt.Sprintf("%%PDF-1.7\n%%\xe2\xe3\xcf\xd3\n%% upload %d\n", i)), bytes.Repeat([]byte{byte('a' + i)}, size)...)
			a, err := c.Upload(ctx, "default", fmt.Sprintf("f%d.pdf", i), bytes.NewReader(data))
			if err == nil {
				mu.Lock()
				kept += a.Size
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, kept, int64(attachment.MaxStaged), "staged %d MiB, at most %d MiB may wait", kept>>20, attachment.MaxStaged>>20)
}

// The message's attachments are bound to the session in checkMessage,
// before the command is checked further (its idempotency key's length)
// and recorded: a refused message leaves its files bound to the session
// (counted against its 50 MiB, placed in its working copy) with no
// message naming them. (The same happens on a retried send whose
// payload differs: a 409 after the bind.)
func TestAttackRefusedMessageStillBindsItsFiles(t *testing.T) {
	ctx := context.Background()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: gitRepo(t)})
	require.NoError(t, err)
	defer send(t, x.ID, session.KindStop, session.StopPayload{})
	a := upload(t, "default", "orphan.txt", []byte("orphan\n"))
	payload, _ := json.Marshal(session.MessagePayload{Message: "look", Attachments: []session.AttachmentRef{{ID: a.ID}}})
	_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload, IdempotencyKey: strings.Repeat("k", 300)})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "%v", err)
	list, err := api.Attachments(ctx, x.ID)
	require.NoError(t, err)
	assert.Empty(t, list, "a refused message bound its attachment to the session")
}

// Held: a user of no project reads nothing; a viewer cannot upload;
// SVG/HTML come back as text downloads with nosniff and a sandboxing
// CSP; odd names (invalid UTF-8, huge, empty) are answered, not crashed
// on; a staged upload has no content route.
func TestHeldAccessAndServing(t *testing.T) {
	ctx := context.Background()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1")
	svg := upload(t, "default", "x.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.cookie)"><script>alert(1)</script></svg>`))
	html := upload(t, "default", "x.html", []byte(`<!DOCTYPE html><html><script>alert(1)</script></html>`))
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: gitRepo(t)})
	require.NoError(t, err)
	defer send(t, x.ID, session.KindStop, session.StopPayload{})
	require.NoError(t, sendWith(x.ID, "look", session.AttachmentRef{ID: svg.ID}, session.AttachmentRef{ID: html.ID}))
	for _, a := range []session.Attachment{svg, html} {
		resp, err := authed("GET", shared.URL+"/v1/sessions/"+x.ID+"/attachments/"+a.ID, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment;"))
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}

	outsider := unique("zzoutsider")
	member(t, unique("zzelsewhere"), outsider, identity.Member)
	_, out := tokenOf(t, outsider)
	_, err = out.Attachments(ctx, x.ID)
	require.Error(t, err)
	var buf bytes.Buffer
	require.Error(t, out.AttachmentContent(ctx, x.ID, svg.ID, &buf))
	_, err = out.Upload(ctx, "default", "a.txt", strings.NewReader("x"))
	require.Error(t, err)

	viewer := unique("zzviewer")
	member(t, "default", viewer, identity.Viewer)
	_, v := tokenOf(t, viewer)
	_, err = v.Upload(ctx, "default", "a.txt", strings.NewReader("x"))
	require.Equal(t, http.StatusForbidden, apiStatus(t, err), "%v", err)

	for _, name := range []string{"%ff%fe", url.QueryEscape(strings.Repeat("é", 20000)), "%00", url.QueryEscape(plantedGitHub + ".txt")} {
		resp, err := authed("POST", shared.URL+"/v1/projects/default/attachments?name="+name, "application/octet-stream", strings.NewReader("hello"))
		require.NoError(t, err)
		var a session.Attachment
		_ = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 500, name)
		if resp.StatusCode != http.StatusCreated {
			continue
		}
		require.LessOrEqual(t, len(a.Name), attachment.MaxName)
		require.NotContains(t, a.Name, "8kT3zQw9XvLm2RbN7cYp4HsJd6FgA1eUoK5i", "a token-like name is redacted")
	}
	staged := upload(t, "default", "staged.txt", []byte("staged\n"))
	resp, err := authed("GET", shared.URL+"/v1/sessions/"+x.ID+"/attachments/"+staged.ID, "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// Resolve names a message's files apart from the session's, then binds
// them; the store has no unique (session, name): two messages sent at
// once with files of the same name both keep it, so one file in the
// working copy stands for two attachments (each step rewrites it).
func TestAttackConcurrentSendsShareAName(t *testing.T) {
	ctx := context.Background()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: gitRepo(t)})
	require.NoError(t, err)
	defer send(t, x.ID, session.KindStop, session.StopPayload{})
	for round := range 30 {
		name := fmt.Sprintf("dup%d.txt", round)
		var ids []string
		for i := range 4 {
			ids = append(ids, upload(t, "default", name, []byte(fmt.Sprintf("%d %d\n", round, i))).ID)
		}
		var wg sync.WaitGroup
		go1 := make(chan struct{})
		for _, id := range ids {
			wg.Add(1)
			go func() { defer wg.Done(); <-go1; _ = sendWith(x.ID, "look", session.AttachmentRef{ID: id}) }()
		}
		close(go1)
		wg.Wait()
	}
	list, err := api.Attachments(ctx, x.ID)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, a := range list {
		seen[a.Name]++
	}
	for name, n := range seen {
		assert.Equal(t, 1, n, "%d of the session's attachments are named %s", n, name)
	}
}

// A text upload is redacted window by window: a window starting inside
// one long base64 line would not be on the run's 4-byte grid, and a
// credential encoded deep in it would be kept; no window cuts a run.
func TestAttackEncodedSecretDeepInALongLineIsKept(t *testing.T) {
	key := plantedAWS
	filler := strings.Repeat("the build step printed this line and carried on with the next one\n", 1500)
	text := "blob: " + base64.StdEncoding.EncodeToString([]byte(filler+"aws_access_key_id = "+key+"\n"+filler)) + "\n"
	a := upload(t, "default", "blob.txt", []byte(text))
	assert.NotZero(t, a.Redacted, "the encoded credential was kept (%d bytes stored)", a.Size)
}
