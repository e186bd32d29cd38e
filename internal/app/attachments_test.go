package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// pngImage is a real 2×2 PNG.
func pngImage(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(1, 1, color.RGBA{0, 128, 255, 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func upload(t *testing.T, project, name string, data []byte) session.Attachment {
	t.Helper()
	a, err := api.Upload(context.Background(), project, name, bytes.NewReader(data))
	require.NoError(t, err)
	return a
}

func sendWith(id, text string, refs ...session.AttachmentRef) error {
	payload, _ := json.Marshal(session.MessagePayload{Message: text, Attachments: refs})
	_, err := api.Sessions().Send(context.Background(), id, wire.SendRequest{Kind: session.KindMessage, Payload: payload})
	return err
}

// TestAttachmentsReachTheModel: a screenshot and a log file (with a
// planted credential) given with a session's first message reach an
// OpenAI-wire model (the official SDK against a real HTTP server) as an
// image part and inline text, the credential redacted; the agent's
// command reads the log in the working copy, where both files are
// read-only and outside the diff; the transcript names them with their
// digests, the audit log holds the digests alone, and a reader fetches
// them back. A second file of the same name takes another name.
func TestAttachmentsReachTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	args, _ := json.Marshal(map[string]string{"command": "cat .paddock/attachments/notes.txt"})
	srv := openAIServer(t,
		providertest.Reply{SSE: providertest.OpenAIStream("Reading the log.", providertest.Call{ID: "call_1", Name: "run_command", Args: string(args)})},
		providertest.Reply{SSE: providertest.OpenAIStream("The build failed on line two.")},
		providertest.Reply{SSE: providertest.OpenAIStream("Second notes seen.")})

	shot := pngImage(t)
	notes := "build log\nline two: FAILED, token aws_access_key_id = " + plantedAWS + "\n"
	img := upload(t, "default", "../screens/shot.png", shot)
	require.Equal(t, "shot.png", img.Name, "one path element")
	require.Equal(t, session.AttachmentImage, img.Kind)
	require.Equal(t, "image/png", img.Type)
	txt := upload(t, "default", "notes.txt", []byte(notes))
	require.Equal(t, session.AttachmentText, txt.Kind)
	require.Equal(t, 1, txt.Redacted, "the credential was redacted before anything was kept")

	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "openai/gpt-4o", Repo: gitRepo(t), Message: "why did the build fail?",
		Attachments: []session.AttachmentRef{{ID: img.ID}, {ID: txt.ID}}})
	require.NoError(t, err)
	approveTurns(t, x.ID, 1, "reading the log")
	x, err = api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)

	// The model's first call: the image as an image part, the log inline.
	user := srv.Requests[0]["messages"].([]any)[0].(map[string]any)
	parts, _ := json.Marshal(user["content"])
	require.Contains(t, string(parts), `"image_url":{"url":"data:image/png;base64,`+base64.StdEncoding.EncodeToString(shot)+`"}`)
	require.Contains(t, string(parts), "line two: FAILED")
	require.Contains(t, string(parts), "also at .paddock/attachments/notes.txt")
	for i := range srv.Requests {
		body, _ := json.Marshal(srv.Requests[i])
		require.NotContains(t, string(body), plantedAWS, "the model is never sent the credential")
	}
	// The command read the log in the working copy (the sandbox's view).
	var result string
	for _, m := range srv.Requests[1]["messages"].([]any) {
		if m := m.(map[string]any); m["role"] == "tool" {
			result, _ = m["content"].(string)
		}
	}
	require.Contains(t, result, "line two: FAILED")
	require.Contains(t, result, "REDACTED")

	// In the working copy: read-only, the sandbox's user cannot change
	// them (root's, in root's directory), and outside the diff.
	dir := filepath.Join(x.Workdir, session.AttachmentsDir)
	held, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	require.NotContains(t, string(held), plantedAWS)
	require.Contains(t, string(held), "line two: FAILED")
	for _, p := range []string{dir, filepath.Join(dir, "notes.txt"), filepath.Join(dir, "shot.png")} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Zero(t, fi.Mode().Perm()&0o222, "%s is read-only", p)
		require.Equal(t, uint32(os.Getuid()), fi.Sys().(*syscall.Stat_t).Uid, "%s is the server's", p)
	}
	d, err := api.Review().Diff(ctx, x.ID)
	require.NoError(t, err)
	require.NotContains(t, d.Patch, ".paddock")
	for _, f := range d.Files {
		require.False(t, strings.HasPrefix(f.Path, ".paddock/"), f.Path)
	}

	// The transcript names them; the audit log has their digests alone.
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	var said session.TextData
	for _, e := range events {
		if e.Kind == session.EventUserMessage {
			require.NoError(t, json.Unmarshal(e.Data, &said))
			break
		}
	}
	require.Len(t, said.Attachments, 2)
	require.Equal(t, session.AttachmentRef{ID: img.ID, Name: "shot.png", Kind: session.AttachmentImage, Type: "image/png", Size: int64(len(shot)), Digest: img.Digest}, said.Attachments[0])
	require.Equal(t, txt.Digest, said.Attachments[1].Digest)
	log, err := api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	found := false
	for _, e := range log {
		if e.Kind == string(session.EventUserMessage) {
			require.Equal(t, img.Digest+","+txt.Digest, e.Meta["attachments"])
			found = true
		}
		entry, _ := json.Marshal(e)
		require.NotContains(t, string(entry), "shot.png", "digests only")
	}
	require.True(t, found, "the message is in the audit log")
	list, err := api.Attachments(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	var back bytes.Buffer
	require.NoError(t, api.AttachmentContent(ctx, x.ID, txt.ID, &back))
	require.Equal(t, string(held), back.String())
	resp, err := authed("GET", shared.URL+"/v1/sessions/"+x.ID+"/attachments/"+img.ID, "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox")

	// Another notes.txt in the same session: named apart.
	again := upload(t, "default", "notes.txt", []byte("second notes\n"))
	require.NoError(t, sendWith(x.ID, "and these?", session.AttachmentRef{ID: again.ID}))
	approveTurns(t, x.ID, 2, "")
	list, err = api.Attachments(ctx, x.ID)
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, "notes-2.txt", list[2].Name)
	held, err = os.ReadFile(filepath.Join(dir, "notes-2.txt"))
	require.NoError(t, err)
	require.Equal(t, "second notes\n", string(held))
	send(t, x.ID, session.KindStop, session.StopPayload{})
}

// TestAttachmentsAreRefusedWithTheReason: an upload over the limit (413),
// of a type not allowed whatever its name says (415), without a name
// (400); a message naming an attachment that does not exist, another
// user's, one another session was given, or one its model cannot take
// (400): each refused with the reason, nothing bound.
func TestAttachmentsAreRefusedWithTheReason(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1") // never called
	_, err := api.Upload(ctx, "default", "big.txt", bytes.NewReader(bytes.Repeat([]byte("a"), 10<<20+1)))
	require.Equal(t, http.StatusRequestEntityTooLarge, apiStatus(t, err), "%v", err)
	require.ErrorContains(t, err, "the most one attachment holds")
	_, err = api.Upload(ctx, "default", "innocent.png", bytes.NewReader(append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...)))
	require.Equal(t, http.StatusUnsupportedMediaType, apiStatus(t, err), "%v", err)
	require.ErrorContains(t, err, "not an allowed type")
	resp, err := authed("POST", shared.URL+"/v1/projects/default/attachments", "application/octet-stream", strings.NewReader("hello"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a name is required")

	member(t, "default", "mallory", identity.Member)
	_, mallory := tokenOf(t, "mallory")
	hers, err := mallory.Upload(ctx, "default", "hers.txt", strings.NewReader("mallory's notes"))
	require.NoError(t, err)
	member(t, "elsewhere", "mallory", identity.Member)
	_, err = mallory.Upload(ctx, "elsewhere", "other.txt", strings.NewReader("another project"))
	require.NoError(t, err)

	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/demo", Repo: gitRepo(t)})
	require.NoError(t, err)
	y, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "openai/gpt-3.5-turbo", Repo: gitRepo(t)})
	require.NoError(t, err)
	mine := upload(t, "default", "mine.txt", []byte("my notes"))
	shot := upload(t, "default", "shot.png", pngImage(t))

	for name, c := range map[string]struct {
		id, to string
		want   string
	}{
		"missing":          {"att_nope", x.ID, "no attachment"},
		"another user's":   {hers.ID, x.ID, "no attachment"},
		"image, no vision": {shot.ID, y.ID, "does not take images"},
	} {
		err := sendWith(c.to, "look", session.AttachmentRef{ID: c.id})
		require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "%s: %v", name, err)
		require.ErrorContains(t, err, c.want, name)
	}
	require.NoError(t, sendWith(x.ID, "look", session.AttachmentRef{ID: mine.ID}))
	err = sendWith(y.ID, "look too", session.AttachmentRef{ID: mine.ID})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err))
	require.ErrorContains(t, err, "sent with another session's message")
	a, err := api.Attachments(ctx, y.ID)
	require.NoError(t, err)
	require.Empty(t, a, "nothing bound to the refused session")
	payload, _ := json.Marshal(map[string]any{"message": "x", "attachments": []map[string]any{{"id": mine.ID, "bogus": 1}}})
	_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "unknown fields")
	_, err = mallory.Attachments(ctx, x.ID)
	require.Equal(t, http.StatusOK, func() int {
		if err == nil {
			return http.StatusOK
		}
		return apiStatus(t, err)
	}(), "a member reads the session's attachments")
	var out bytes.Buffer
	err = api.AttachmentContent(ctx, y.ID, mine.ID, &out)
	require.Equal(t, http.StatusNotFound, apiStatus(t, err), "not through another session")
	send(t, x.ID, session.KindStop, session.StopPayload{})
	send(t, y.ID, session.KindStop, session.StopPayload{})

	// Collected with the session.
	waitStatus(t, x.ID, session.StatusStopped)
	_, err = api.Review().GC(ctx)
	require.NoError(t, err)
	a, err = api.Attachments(ctx, x.ID)
	require.NoError(t, err)
	require.Empty(t, a, "gone with the stopped session's copy")
	err = api.AttachmentContent(ctx, x.ID, mine.ID, &out)
	require.Equal(t, http.StatusNotFound, apiStatus(t, err))
}

// TestAttachmentsReachClaude: on the Anthropic wire (the official SDK
// against a real HTTP server), a message's PDF is a document block and
// its image an image block; a model that takes neither is refused them
// when the message is sent.
func TestAttachmentsReachClaude(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	srv := providertest.NewServer(t, "", providertest.Reply{SSE: providertest.AnthropicStream("Read the spec.")})
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	pdf := []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
	doc := upload(t, "default", "spec.pdf", pdf)
	require.Equal(t, session.AttachmentPDF, doc.Kind)
	shot := upload(t, "default", "shot.png", pngImage(t))

	old, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "anthropic/claude-3-5-haiku-latest", Repo: gitRepo(t)})
	require.NoError(t, err)
	err = sendWith(old.ID, "read it", session.AttachmentRef{ID: doc.ID})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err))
	require.ErrorContains(t, err, "does not take PDF documents")
	send(t, old.ID, session.KindStop, session.StopPayload{})

	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "anthropic/claude-sonnet-4-5", Repo: gitRepo(t), Message: "read the spec",
		Attachments: []session.AttachmentRef{{ID: doc.ID}, {ID: shot.ID}}})
	require.NoError(t, err)
	approveTurns(t, x.ID, 1, "")
	content, _ := json.Marshal(srv.Requests[0]["messages"].([]any)[0].(map[string]any)["content"])
	require.Contains(t, string(content), `{"source":{"data":"`+base64.StdEncoding.EncodeToString(pdf)+`","media_type":"application/pdf","type":"base64"},"type":"document"}`)
	require.Contains(t, string(content), `"media_type":"image/png","type":"base64"},"type":"image"}`)
	send(t, x.ID, session.KindStop, session.StopPayload{})
}

// TestAttachFromTheCLI: paddock run --attach and paddock sessions send
// --attach upload the files and name them in the message; the
// transcript printed shows each with its path in the working copy; a
// file of a type not allowed stops the command with the reason.
func TestAttachFromTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	srv := openAIServer(t, providertest.Reply{SSE: providertest.OpenAIStream("Seen the screenshot.")},
		providertest.Reply{SSE: providertest.OpenAIStream("Seen the notes.")})
	dir := t.TempDir()
	shot, notes, bad := filepath.Join(dir, "shot.png"), filepath.Join(dir, "notes.md"), filepath.Join(dir, "tool.txt")
	require.NoError(t, os.WriteFile(shot, pngImage(t), 0o644))
	require.NoError(t, os.WriteFile(notes, []byte("# Notes\nthe page is blank\n"), 0o644))
	require.NoError(t, os.WriteFile(bad, append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...), 0o644))

	env := map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": adminToken, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": srv.URL}
	code, out := paddockEnv(t, env, "run", "--model", "openai/gpt-4o", "--repo", gitRepo(t), "--attach", shot, "why is the page blank?")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "attached shot.png (image/png,")
	require.Contains(t, out, "at .paddock/attachments/shot.png")
	require.Contains(t, out, "Seen the screenshot.")
	list, err := api.Sessions().List(ctx, session.Filter{})
	require.NoError(t, err)
	var id string
	for _, x := range list {
		if x.DisplayTitle != "" && strings.Contains(x.Input, "why is the page blank?") {
			id = x.ID
		}
	}
	require.NotEmpty(t, id)
	code, out = paddockEnv(t, env, "sessions", "send", id, "and the notes?", "--attach", notes)
	require.Equal(t, 0, code, out)
	approveTurns(t, id, 2, "")
	files, err := api.Attachments(ctx, id)
	require.NoError(t, err)
	require.Len(t, files, 2)
	require.Equal(t, "notes.md", files[1].Name)
	require.Equal(t, session.AttachmentText, files[1].Kind)
	require.Contains(t, func() string { b, _ := json.Marshal(srv.Requests[1]); return string(b) }(), "the page is blank")

	code, out = paddockEnv(t, env, "sessions", "send", id, "and this?", "--attach", bad)
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "tool.txt: its content is application/x-elf, not an allowed type")
	code, out = paddockEnv(t, env, "sessions", "send", id, "and this?", "--attach", filepath.Join(dir, "missing.txt"))
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "missing.txt: no such file or directory")
	send(t, id, session.KindStop, session.StopPayload{})
}

// TestSlackFilesAreAttachments: a file shared with the mention that
// starts a session, and one shared in its thread, are fetched with the
// app's bot token and given to the model with their messages; a file
// Slack does not hold (a link elsewhere) is refused with the reason,
// and the token never leaves for it.
func TestSlackFilesAreAttachments(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	srv := openAIServer(t, providertest.Reply{SSE: providertest.OpenAIStream("I see the screenshot.")},
		providertest.Reply{SSE: providertest.OpenAIStream("And the log.")})
	const project, team, channel, user = "chatfiles", "T0FILES", "C0FILES", "U0FILES"
	member(t, project, "tester", identity.Admin)
	_, err := api.Projects().Apply(ctx, []byte("name: looker\nproject: "+project+"\nmodel: openai/gpt-4o\n"))
	require.NoError(t, err)
	_, err = api.Projects().SetSlackApp(ctx, project, wire.SlackAppRequest{Team: team, BotToken: "xoxb-files", SigningSecret: slackSecret,
		Channels: []chat.Channel{{ID: channel, Agent: "looker", Repo: gitRepo(t)}}})
	require.NoError(t, err)
	shot := pngImage(t)
	ws.mu.Lock()
	ws.files["/files/F1/shot.png"] = shot
	ws.files["/files/F2/build.log"] = []byte("step 3 failed\n")
	ws.mu.Unlock()
	file := func(id, name, url string, size int) map[string]any {
		return map[string]any{"id": id, "name": name, "size": size, "url_private_download": url}
	}
	signed := slackSign(slackSecret)
	say := func(inner map[string]any) {
		t.Helper()
		code, body := deliver(t, project, "events", "application/json", eventOf(team, inner), signed)
		require.Equal(t, http.StatusOK, code, body)
	}
	say(map[string]any{"type": "app_mention", "user": user, "text": "<@" + slackBot + "> hello", "ts": "1699999995.000100", "channel": channel})
	m := ws.find(t, "the linking notice", true, func(m slackMessage) bool { return m.User == user && linkCode.MatchString(m.Text) })
	status, out := paddock(t, "slack", "link", linkCode.FindStringSubmatch(m.Text)[1])
	require.Equal(t, 0, status, out)

	const root = "1699999995.000200"
	say(map[string]any{"type": "app_mention", "user": user, "text": "<@" + slackBot + "> why is the page blank?", "ts": root, "channel": channel,
		"files": []map[string]any{file("F1", "shot.png", ws.GetAPIURL()+"files/F1/shot.png", len(shot))}})
	ws.find(t, "the first turn's reply", false, func(m slackMessage) bool {
		return m.Thread == root && strings.Contains(m.Blocks, "I see the screenshot.")
	})
	body, _ := json.Marshal(srv.Requests[0])
	require.Contains(t, string(body), "data:image/png;base64,"+base64.StdEncoding.EncodeToString(shot))

	say(map[string]any{"type": "message", "subtype": "file_share", "user": user, "text": "", "ts": "1699999995.000300", "thread_ts": root, "channel": channel,
		"files": []map[string]any{file("F2", "build.log", ws.GetAPIURL()+"files/F2/build.log", 14)}})
	ws.find(t, "the second turn's reply", false, func(m slackMessage) bool { return m.Thread == root && strings.Contains(m.Blocks, "And the log.") })
	body, _ = json.Marshal(srv.Requests[1])
	require.Contains(t, string(body), "step 3 failed")

	say(map[string]any{"type": "message", "subtype": "file_share", "user": user, "text": "and this", "ts": "1699999995.000400", "thread_ts": root, "channel": channel,
		"files": []map[string]any{file("F3", "leak.txt", "https://evil.example/files/F3/leak.txt", 10)}})
	ws.find(t, "the refusal", true, func(m slackMessage) bool {
		return m.User == user && strings.Contains(m.Text, "leak.txt is not a file Slack holds")
	})
	ws.mu.Lock()
	defer ws.mu.Unlock()
	require.Equal(t, []string{"Bearer xoxb-files", "Bearer xoxb-files"}, ws.fetched, "the two files fetched with the app's token, nothing else")
}
