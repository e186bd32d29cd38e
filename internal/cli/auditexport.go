package cli

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
)

// exporter is `paddock audit export`: it reads the server's export as JSON
// lines, writes each entry once in the chosen format to its sink, and,
// following, resumes after a dropped connection from the last entry seen.
type exporter struct {
	format, since, output, syslog string
	follow                        bool

	// last is the time of the last entry written and seen the keys of
	// the entries written at that time: a resumed export starts there.
	last time.Time
	seen map[string]bool
}

// retryEvery is how long a follower waits before reconnecting.
const retryEvery = 2 * time.Second

func (x *exporter) run(ctx context.Context, g *globals) error {
	if x.format != audit.FormatJSONL && x.format != audit.FormatCEF {
		return &exitError{Code: 2, Msg: fmt.Sprintf("--format %q: want jsonl or cef", x.format)}
	}
	if x.output != "" && x.syslog != "" {
		return &exitError{Code: 2, Msg: "--output and --syslog: choose one"}
	}
	if x.since != "" {
		t, err := time.Parse(time.RFC3339, x.since)
		if err != nil {
			d, derr := time.ParseDuration(x.since)
			if derr != nil || d <= 0 {
				return &exitError{Code: 2, Msg: fmt.Sprintf("--since %q: want an RFC 3339 time (2026-11-30T12:00:00Z) or a duration back from now (24h)", x.since)}
			}
			t = time.Now().Add(-d)
		}
		x.last = t
	}
	sink, err := x.open(g.io.Out)
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
		err := g.remote().Audit().Export(ctx, pw, audit.FormatJSONL, x.last, x.follow)
		pw.CloseWithError(err)
		if cerr := <-done; cerr != nil && err == nil {
			err = cerr
		}
		if !x.follow || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil // interrupted while following: done
			}
			return err
		}
		if err == nil {
			err = fmt.Errorf("the server ended the stream")
		}
		fmt.Fprintf(g.io.Err, "audit export: %v; resuming in %s\n", err, retryEvery)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryEvery):
		}
	}
}

// copy writes each entry read from r to sink once.
func (x *exporter) copy(ctx context.Context, r io.Reader, sink audit.Sink) error {
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
		line, err := audit.Line(e, x.format, "1")
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

func (x *exporter) open(stdout io.Writer) (audit.Sink, error) {
	switch {
	case x.syslog != "":
		u, err := url.Parse(x.syslog)
		if err != nil || u.Scheme != "tcp" || u.Host == "" || u.Port() == "" {
			return nil, &exitError{Code: 2, Msg: fmt.Sprintf("--syslog %q: want tcp://HOST:PORT", x.syslog)}
		}
		host, _ := os.Hostname()
		return audit.SyslogSink(u.Host, host, x.follow, retryEvery), nil
	case x.output != "":
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if x.follow {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(x.output, flags, 0o600)
		if err != nil {
			return nil, err
		}
		return audit.LineSink(f), nil
	}
	return audit.LineSink(nopCloser{stdout}), nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
