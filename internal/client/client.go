// Package client is the typed Go client of Paddock's HTTP API, used by the
// CLI and by end-to-end tests.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Client talks to one Paddock server.
type Client struct {
	base  string
	token string
	http  *http.Client
	err   error // every call fails with it (Failing)
	// where is the server's address when base is not it (a Unix socket).
	where string
}

// WithToken is the client sending token (Authorization: Bearer) on every
// call.
func (c *Client) WithToken(token string) *Client {
	d := *c
	d.token = strings.TrimSpace(token)
	return &d
}

func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// Failing returns a client whose every call fails with err: the reason no
// server could be reached or started.
func Failing(err error) *Client { return &Client{err: err, http: &http.Client{}} }

// New returns a client for a base URL such as http://127.0.0.1:7470, or
// unix:/run/user/1000/paddock/api.sock for a server on a Unix socket.
func New(base string) *Client {
	if path, ok := strings.CutPrefix(base, "unix:"); ok {
		var d net.Dialer
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}}
		return &Client{base: "http://paddock.local", http: &http.Client{Transport: tr}, where: base}
	}
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{}}
}

// server names the server in messages.
func (c *Client) server() string {
	if c.where != "" {
		return c.where
	}
	return c.base
}

// Error is an error response from the server.
type Error struct {
	Status int
	Body   wire.Error
}

func (e *Error) Error() string { return e.Body.Error }

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	if c.err != nil {
		return c.err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	c.authorize(req)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the paddock server at %s (start one with `paddock serve`, or set PADDOCK_SERVER): %w", c.server(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e wire.Error
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(data)))
		}
		return &Error{Status: resp.StatusCode, Body: e}
	}
	if out == nil {
		return nil
	}
	if w, ok := out.(io.Writer); ok {
		_, err := io.Copy(w, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *Client) json(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	return c.do(ctx, method, path, body, "application/json", out)
}

// Health returns nil when the server is ready.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, "", nil)
}

func (c *Client) stream(ctx context.Context, id string, after *int64, fn func(session.Event) error) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/sessions/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		return true, err
	}
	c.authorize(req)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	resp, err := c.http.Do(req)
	if err != nil {
		return false, &unreachable{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e wire.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return true, &Error{Status: resp.StatusCode, Body: e}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		case line == "":
			if event == "end" {
				return true, nil
			}
			if data != "" {
				var e session.Event
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					return true, fmt.Errorf("bad event from server: %w", err)
				}
				*after = e.Seq
				if err := fn(e); err != nil {
					return true, err
				}
			}
			event, data = "", ""
		}
	}
	return false, sc.Err()
}

// ReconnectFor is how long Stream keeps trying a server it cannot reach.
var ReconnectFor = 30 * time.Second

// unreachable is a connection that could not be made at all.
type unreachable struct{ err error }

func (u *unreachable) Error() string { return u.err.Error() }
func (u *unreachable) Unwrap() error { return u.err }
