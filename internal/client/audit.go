package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Log is a session's audit log; with content, each entry carries
// the content its project retained.
func (c Audit) Log(ctx context.Context, id string, content bool) ([]wire.AuditEntry, error) {
	var out []wire.AuditEntry
	path := "/v1/sessions/" + url.PathEscape(id) + "/audit"
	if content {
		path += "?content=true"
	}
	err := c.json(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// Export streams every session's audit entries written since (zero:
// all) in format (jsonl or cef) to w, in the order written; following, it
// goes on with the entries written next until ctx ends.
func (c Audit) Export(ctx context.Context, w io.Writer, format string, since time.Time, follow bool) error {
	q := url.Values{"format": {format}}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	if follow {
		q.Set("follow", "true")
	}
	return c.do(ctx, http.MethodGet, "/v1/audit/export?"+q.Encode(), nil, "", w)
}

// ContentRetention is how long project keeps audit content ("0s": none).
func (c Audit) ContentRetention(ctx context.Context, project string) (string, error) {
	var out wire.Retention
	err := c.json(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/retention", nil, &out)
	return out.Content, err
}

// SetContentRetention sets how long project keeps audit content.
func (c Audit) SetContentRetention(ctx context.Context, project string, d time.Duration) (string, error) {
	var out wire.Retention
	err := c.json(ctx, http.MethodPut, "/v1/projects/"+url.PathEscape(project)+"/retention", wire.Retention{Content: d.String()}, &out)
	return out.Content, err
}

// Checkpoint is a signed checkpoint of the audit tree.
func (c Audit) Checkpoint(ctx context.Context) ([]byte, error) {
	var b bytes.Buffer
	err := c.do(ctx, http.MethodGet, "/v1/audit/checkpoint", nil, "", &b)
	return b.Bytes(), err
}

// Prove asks for the proofs of entry seq of session id (and of the log's
// growth since a checkpoint of oldSize, when > 0).
func (c Audit) Prove(ctx context.Context, id string, seq, oldSize int64) (audit.Proof, error) {
	q := url.Values{"session": {id}, "seq": {strconv.FormatInt(seq, 10)}}
	if oldSize > 0 {
		q.Set("old", strconv.FormatInt(oldSize, 10))
	}
	var out audit.Proof
	err := c.json(ctx, http.MethodGet, "/v1/audit/prove?"+q.Encode(), nil, &out)
	return out, err
}

// Key is the server's public key that seals audit logs (base64).
func (c Audit) Key(ctx context.Context) (string, error) {
	var out struct {
		PublicKey string `json:"publicKey"`
	}
	err := c.json(ctx, http.MethodGet, "/v1/audit/key", nil, &out)
	return out.PublicKey, err
}

// Verify verifies a session's audit log, or every session's ("").
func (c Audit) Verify(ctx context.Context, id string) ([]wire.AuditReport, error) {
	q := url.Values{}
	if id != "" {
		q.Set("session", id)
	}
	var out []wire.AuditReport
	err := c.json(ctx, http.MethodGet, "/v1/audit/verify?"+q.Encode(), nil, &out)
	return out, err
}

// AccessLog is the access log: logins, tokens, users, projects, members.
func (c Audit) AccessLog(ctx context.Context) ([]audit.Entry, error) {
	var out []audit.Entry
	err := c.json(ctx, http.MethodGet, "/v1/audit/access", nil, &out)
	return out, err
}
