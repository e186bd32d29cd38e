package client

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/paddock-dev/paddock/internal/session"
)

// Upload stages a file for a message in project: its ID goes in the
// message's attachments.
func (c *Client) Upload(ctx context.Context, project, name string, content io.Reader) (session.Attachment, error) {
	var a session.Attachment
	err := c.do(ctx, "POST", "/v1/projects/"+url.PathEscape(project)+"/attachments?name="+url.QueryEscape(name), content, "application/octet-stream", &a)
	return a, err
}

// Attach uploads files from disk (each under its base name), in order,
// returning the references a message names them by.
func (c *Client) Attach(ctx context.Context, project string, paths []string) ([]session.AttachmentRef, error) {
	var refs []session.AttachmentRef
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		a, err := c.Upload(ctx, project, filepath.Base(p), f)
		_ = f.Close()
		if err != nil {
			return nil, err
		}
		refs = append(refs, session.AttachmentRef{ID: a.ID})
	}
	return refs, nil
}

// Attachments lists a session's attachments.
func (c *Client) Attachments(ctx context.Context, sessionID string) ([]session.Attachment, error) {
	var out []session.Attachment
	return out, c.json(ctx, "GET", "/v1/sessions/"+url.PathEscape(sessionID)+"/attachments", nil, &out)
}

// AttachmentContent writes one of a session's attachments to w.
func (c *Client) AttachmentContent(ctx context.Context, sessionID, id string, w io.Writer) error {
	return c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(sessionID)+"/attachments/"+url.PathEscape(id), nil, "", w)
}

// AttachTo uploads files for a message to a session (to its project).
func (c *Client) AttachTo(ctx context.Context, sessionID string, paths []string) ([]session.AttachmentRef, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	x, err := c.Sessions().Get(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return c.Attach(ctx, x.Project, paths)
}
