// Package auditexport is `paddock audit export` on the client's side: it
// reads the server's export as JSON lines, writes each entry once in the
// chosen format to its sink (standard output, a file, syslog over TCP),
// and, following, resumes after a dropped connection from the last entry
// seen.
package auditexport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/terminal"
)

// Exporter is one export, as its flags set it.
type Exporter struct {
	Format, Since, Output, Syslog string
	Follow                        bool

	// last is the time of the last entry written and seen the keys of
	// the entries written at that time: a resumed export starts there.
	last time.Time
	seen map[string]bool
}

// retryEvery is how long a follower waits before reconnecting.
const retryEvery = 2 * time.Second

// Source is the server's export of entries since a time, as JSON lines
// (client.Audit.Export).
type Source func(ctx context.Context, w io.Writer, format string, since time.Time, follow bool) error

// Run exports from src to the sink chosen, telling of reconnections on
// stderr.
func (x *Exporter) Run(ctx context.Context, src Source, stdout, stderr io.Writer) error {
	if x.Format != audit.FormatJSONL && x.Format != audit.FormatCEF {
		return &terminal.ExitError{Code: 2, Msg: fmt.Sprintf("--format %q: want jsonl or cef", x.Format)}
	}
	if x.Output != "" && x.Syslog != "" {
		return &terminal.ExitError{Code: 2, Msg: "--output and --syslog: choose one"}
	}
	if x.Since != "" {
		t, err := time.Parse(time.RFC3339, x.Since)
		if err != nil {
			d, derr := time.ParseDuration(x.Since)
			if derr != nil || d <= 0 {
				return &terminal.ExitError{Code: 2, Msg: fmt.Sprintf("--since %q: want an RFC 3339 time (2026-11-30T12:00:00Z) or a duration back from now (24h)", x.Since)}
			}
			t = time.Now().Add(-d)
		}
		x.last = t
	}
	sink, err := x.open(stdout)
	if err != nil {
		return err
	}
	defer sink.Close()
	x.seen = map[string]bool{}
	for {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := x.copy(ctx, pr, sink)
			pr.CloseWithError(err) // a sink that fails stops the download
			done <- err
		}()
		err := src(ctx, pw, audit.FormatJSONL, x.last, x.Follow)
		pw.CloseWithError(err)
		if cerr := <-done; cerr != nil && err == nil {
			err = cerr
		}
		if !x.Follow || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil // interrupted while following: done
			}
			return err
		}
		if err == nil {
			err = fmt.Errorf("the server ended the stream")
		}
		fmt.Fprintf(stderr, "audit export: %v; resuming in %s\n", err, retryEvery)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryEvery):
		}
	}
}

// copy writes each entry read from r to sink once.
func (x *Exporter) copy(ctx context.Context, r io.Reader, sink audit.Sink) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("audit export: unreadable entry from the server: %w", err)
		}
		key := fmt.Sprintf("%s/%d", e.Session, e.Seq)
		if e.Time.Before(x.last) || (e.Time.Equal(x.last) && x.seen[key]) {
			continue // written before the cut of a resumed export
		}
		line, err := audit.Line(e, x.Format, "1")
		if err != nil {
			return err
		}
		if err := sink.Write(ctx, e, line); err != nil {
			return err
		}
		if !e.Time.Equal(x.last) {
			x.last, x.seen = e.Time, map[string]bool{}
		}
		x.seen[key] = true
	}
	return sc.Err()
}

func (x *Exporter) open(stdout io.Writer) (audit.Sink, error) {
	switch {
	case x.Syslog != "":
		u, err := url.Parse(x.Syslog)
		if err != nil || u.Scheme != "tcp" || u.Host == "" || u.Port() == "" {
			return nil, &terminal.ExitError{Code: 2, Msg: fmt.Sprintf("--syslog %q: want tcp://HOST:PORT", x.Syslog)}
		}
		host, _ := os.Hostname()
		return audit.SyslogSink(u.Host, host, x.Follow, retryEvery), nil
	case x.Output != "":
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if x.Follow {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(x.Output, flags, 0o600)
		if err != nil {
			return nil, err
		}
		return audit.LineSink(f), nil
	}
	return audit.LineSink(nopCloser{stdout}), nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
