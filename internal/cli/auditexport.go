package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/poll"
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
func (x *exporter) copy(ctx context.Context, r io.Reader, sink entrySink) error {
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

// entrySink is where exported lines go.
type entrySink interface {
	Write(ctx context.Context, e audit.Entry, line string) error
	Close() error
}

func (x *exporter) open(stdout io.Writer) (entrySink, error) {
	switch {
	case x.syslog != "":
		u, err := url.Parse(x.syslog)
		if err != nil || u.Scheme != "tcp" || u.Host == "" || u.Port() == "" {
			return nil, &exitError{Code: 2, Msg: fmt.Sprintf("--syslog %q: want tcp://HOST:PORT", x.syslog)}
		}
		host, _ := os.Hostname()
		return &syslogSink{addr: u.Host, host: host, retry: x.follow}, nil
	case x.output != "":
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if x.follow {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(x.output, flags, 0o600)
		if err != nil {
			return nil, err
		}
		return lineSink{f}, nil
	}
	return lineSink{nopCloser{stdout}}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// lineSink writes lines to a file or standard output.
type lineSink struct{ w io.WriteCloser }

func (s lineSink) Write(_ context.Context, _ audit.Entry, line string) error {
	_, err := io.WriteString(s.w, line+"\n")
	return err
}

func (s lineSink) Close() error { return s.w.Close() }

// syslogSink sends each line as an RFC 5424 message over TCP; following,
// it reconnects when the connection drops and sends the message again.
type syslogSink struct {
	addr, host string
	retry      bool
	conn       net.Conn
}

func (s *syslogSink) Write(ctx context.Context, e audit.Entry, line string) error {
	frame := audit.Syslog(e, s.host, line)
	for {
		if s.conn == nil {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", s.addr)
			if err != nil {
				if !s.retry || ctx.Err() != nil {
					return fmt.Errorf("syslog %s: %w", s.addr, err)
				}
				if err := poll.Sleep(ctx, retryEvery); err != nil {
					return fmt.Errorf("syslog %s: %w", s.addr, err)
				}
				continue
			}
			s.conn = c
		}
		if closedByPeer(s.conn) {
			s.conn.Close()
			s.conn = nil
			continue
		}
		_ = s.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := s.conn.Write(frame); err != nil {
			s.conn.Close()
			s.conn = nil
			if !s.retry || ctx.Err() != nil {
				return fmt.Errorf("syslog %s: %w", s.addr, err)
			}
			continue
		}
		return nil
	}
}

// closedByPeer says whether the syslog server has closed the connection:
// it never sends, so a read that does not time out means it has. Syslog
// over TCP has no acknowledgements: without this check the first message
// after a drop would be written into a dead socket and lost.
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func (s *syslogSink) Close() error {
	if s.conn == nil {
		return nil
	}
	return s.conn.Close()
}
