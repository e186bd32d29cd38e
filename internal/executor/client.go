package executor

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// maxManifest bounds the manifest the worker reads from a pod.
const maxManifest = 128 << 20

// ErrKeyChanged says the executor answering is not the one first met at
// this sandbox.
var ErrKeyChanged = errors.New("the executor's key is not the one the session keeps")

// Client is the worker's side of one executor.
type Client struct {
	addr string
	http *http.Client
	host map[Tree]*Scanner // of the host's trees

	mu  sync.Mutex
	pin string
}

// Dial prepares a client of the executor at addr (host:port), presenting
// cert. The executor must show the key of fingerprint pin; an empty pin is
// learned at first contact (Pin says it after).
func Dial(addr string, cert tls.Certificate, pin string) *Client {
	c := &Client{addr: addr, pin: pin, host: map[Tree]*Scanner{Work: {}, Deps: {}}}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		// The executor's certificate is its own, pinned rather than issued.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrKeyChanged
			}
			got := Fingerprint(cs.PeerCertificates[0])
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.pin == "" {
				c.pin = got
			}
			if got != c.pin {
				return fmt.Errorf("%w (kept %.16s…, shown %.16s…)", ErrKeyChanged, c.pin, got)
			}
			return nil
		}}
	// Every answer starts within a minute (a command's at once, with its
	// output after); callers bound the whole exchange.
	c.http = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute,
		TLSHandshakeTimeout: 30 * time.Second, ResponseHeaderTimeout: time.Minute}}
	return c
}

// Pin is the fingerprint of the executor's key (empty before first contact).
func (c *Client) Pin() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pin
}

// Addr is the executor's address.
func (c *Client) Addr() string { return c.addr }

// Close drops the client's connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) do(ctx context.Context, method, path, ctype string, body io.Reader) (*http.Response, error) {
	resp, err := c.send(ctx, method, path, ctype, body)
	if err != nil {
		return nil, err
	}
	if err := refused(resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// send is do without reading a refusal.
func (c *Client) send(ctx context.Context, method, path, ctype string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "https://"+c.addr+path, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's executor at %s: %w", c.addr, err)
	}
	return resp, nil
}

// refused is the executor's refusal in resp (whose body it then closes),
// or nil when resp answers.
func refused(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return &StatusError{Code: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
}

// StatusError is a refusal of the executor.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the sandbox's executor refused (%d): %s", e.Code, e.Message)
}

// Renew empties the pod's scratch directories and build cache, as a new
// sandbox has them (before an environment's setup, and before the push
// of its trees).
func (c *Client) Renew(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodPost, "/v1/fresh", "", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Manifest lists the executor's tree.
func (c *Client) Manifest(ctx context.Context, tree Tree) (Manifest, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/manifest?tree="+string(tree), "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxManifest)).Decode(&m); err != nil {
		return nil, fmt.Errorf("the executor's manifest (at most %d MiB): %w", maxManifest>>20, err)
	}
	if len(m) > MaxEntries {
		return nil, fmt.Errorf("the executor's manifest lists more than %d entries", MaxEntries)
	}
	for p := range m {
		if _, err := Clean(p); err != nil {
			return nil, fmt.Errorf("the executor's manifest: %w", err)
		}
	}
	return m, nil
}

// Push makes the executor's tree equal to root, sending only what
// differs.
func (c *Client) Push(ctx context.Context, tree Tree, root *os.Root) (Totals, error) {
	have, err := c.Manifest(ctx, tree)
	if err != nil {
		return Totals{}, err
	}
	want, err := c.host[tree].Scan(root)
	if err != nil {
		return Totals{}, err
	}
	ch := Diff(want, have, nil)
	if ch.Empty() {
		return Totals{}, nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(Pack(pw, root, ch)) }()
	resp, err := c.do(ctx, http.MethodPost, "/v1/put?tree="+string(tree), "application/x-tar", pr)
	_ = pr.Close()
	if err != nil {
		return Totals{}, err
	}
	defer resp.Body.Close()
	var t Totals
	return t, json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&t)
}

// Pull takes back into the host's tree what the executor's changed, of
// the paths Returnable allows: what it removed is removed, what it wrote
// is fetched and written under into's limits. Nothing else the executor
// sends is accepted.
func (c *Client) Pull(ctx context.Context, tree Tree, into Into) (Totals, error) {
	want, err := c.Manifest(ctx, tree)
	if err != nil {
		return Totals{}, err
	}
	have, err := c.host[tree].Scan(into.Root)
	if err != nil {
		return Totals{}, err
	}
	ch := Diff(want, have, Returnable)
	var t Totals
	dirs := checked{}
	for _, p := range ch.Remove {
		dirs.forget(p)
		gone, err := remove(into.Root, p, dirs)
		if err != nil {
			return t, err
		}
		if gone {
			t.Removed++
		}
	}
	if len(ch.Copy) == 0 {
		return t, nil
	}
	asked := map[string]bool{}
	for _, p := range ch.Copy {
		asked[p] = true
	}
	body, _ := json.Marshal(ch.Copy)
	resp, err := c.do(ctx, http.MethodPost, "/v1/get?tree="+string(tree), "application/json", bytes.NewReader(body))
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	into.Accept = func(p string) bool { return asked[p] }
	got, err := Unpack(resp.Body, into)
	t.Written, t.Bytes = got.Written, got.Bytes
	return t, err
}

// Run runs one command, reaching the network by route when not nil, and
// says how it ended. A command whose answer breaks off is not asked
// again: whether it ran is unknown.
func (c *Client) Run(ctx context.Context, cmd sandbox.Command, route *egress.Route) (sandbox.Result, error) {
	id := cmd.ID
	if id == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		id = "fresh/" + hex.EncodeToString(b)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultTimeout
	}
	body, _ := json.Marshal(RunRequest{ID: id, Script: cmd.Script, Env: cmd.Env, TimeoutMS: timeout.Milliseconds(), MaxOutput: cmd.MaxOutput, Deps: cmd.Deps != "", Egress: route})
	// The executor kills the command at its time limit; the worker waits
	// a little longer for the answer.
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	resp, err := c.do(ctx, http.MethodPost, "/v1/run", "application/json", bytes.NewReader(body))
	if err != nil {
		return sandbox.Result{}, err
	}
	defer resp.Body.Close()
	// The pod's answer is hostile input too: the output cap holds here
	// whatever the executor says.
	left := cmd.MaxOutput
	if left <= 0 {
		left = sandbox.DefaultMaxOutput
	}
	var dropped int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return sandbox.Result{}, fmt.Errorf("the executor's answer: %w", err)
		}
		switch {
		case f.Result != nil:
			r := f.Result
			return sandbox.Result{ExitCode: r.ExitCode, Discarded: max(r.Discarded, dropped), TimedOut: r.TimedOut, Duration: time.Duration(r.DurationMS) * time.Millisecond}, nil
		case f.Fail != "":
			return sandbox.Result{}, fmt.Errorf("the sandbox's executor: %s", f.Fail)
		}
		w := cmd.Stdout
		if f.Err {
			w = cmd.Stderr
		}
		if int64(len(f.Out)) > left {
			dropped += int64(len(f.Out)) - left
			f.Out = f.Out[:left]
		}
		left -= int64(len(f.Out))
		if w != nil && len(f.Out) > 0 {
			if _, err := w.Write(f.Out); err != nil {
				return sandbox.Result{}, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("the executor's answer broke off (the command may or may not have run): %w", err)
	}
	return sandbox.Result{}, errors.New("the executor's answer ended before the command's result (the command may or may not have run)")
}
