package slackbot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
)

// attach uploads the files shared with a message, as the person who
// shared them, to the app's project: each fetched from Slack with the
// app's bot token (only from Slack's own hosts: the token goes nowhere
// else), at most attachment.MaxFile.
func (b *Bot) attach(ctx context.Context, sec chat.Secrets, who identity.Principal, project string, files []slack.File) ([]session.AttachmentRef, error) {
	if len(files) > session.MaxAttachments {
		return nil, fmt.Errorf("%w: %d files, at most %d with one message", errdefs.ErrInvalid, len(files), session.MaxAttachments)
	}
	var refs []session.AttachmentRef
	for _, f := range files {
		if f.Size > attachment.MaxFile {
			return nil, fmt.Errorf("%w: %s: %s, at most %s", errdefs.ErrTooLarge, f.Name, clip.Bytes(int64(f.Size)), clip.Bytes(attachment.MaxFile))
		}
		if f.IsExternal || !b.slackHolds(f.URLPrivateDownload) {
			return nil, fmt.Errorf("%w: %s is not a file Slack holds (a link elsewhere): upload the file itself", errdefs.ErrInvalid, f.Name)
		}
		w := &capped{max: attachment.MaxFile}
		if err := b.poster.client(sec.BotToken).GetFileContext(ctx, f.URLPrivateDownload, w); err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, fmt.Errorf("%w: %s: more than %s", errdefs.ErrTooLarge, f.Name, clip.Bytes(attachment.MaxFile))
			}
			return nil, fmt.Errorf("%w: %s could not be fetched from Slack (%v): does the app have the files:read scope?", errdefs.ErrUnavailable, f.Name, err)
		}
		a, err := b.Engine.Attachments.Upload(ctx, who, project, f.Name, w.buf.Bytes())
		if err != nil {
			return nil, err
		}
		refs = append(refs, session.AttachmentRef{ID: a.ID})
	}
	return refs, nil
}

var errTooLarge = errors.New("too large")

// slackHolds says a download URL is Slack's own (https on slack.com, or
// the API's host where one is configured): the only place the bot token
// is sent.
func (b *Bot) slackHolds(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if api, err := url.Parse(b.APIURL); b.APIURL != "" && err == nil && u.Scheme == api.Scheme && u.Host == api.Host {
		return true
	}
	host := u.Hostname()
	return u.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com"))
}

// capped is a buffer that refuses to grow beyond max.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		return 0, errTooLarge
	}
	return c.buf.Write(p)
}
