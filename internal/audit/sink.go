package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Sink is where exported lines go.
type Sink interface {
	Write(ctx context.Context, e Entry, line string) error
	Close() error
}

// LineSink writes lines to w (a file, standard output).
func LineSink(w io.WriteCloser) Sink { return lineSink{w} }

type lineSink struct{ w io.WriteCloser }

func (s lineSink) Write(_ context.Context, _ Entry, line string) error {
	_, err := io.WriteString(s.w, line+"\n")
	return err
}

func (s lineSink) Close() error { return s.w.Close() }

// SyslogSink sends each line as an RFC 5424 message over TCP to addr,
// from host; with retry (an export that follows) it reconnects, every
// retryEvery, when the connection drops, and sends the message again.
func SyslogSink(addr, host string, retry bool, retryEvery time.Duration) Sink {
	return &syslogSink{addr: addr, host: host, retry: retry, every: retryEvery}
}

type syslogSink struct {
	addr, host string
	retry      bool
	every      time.Duration
	conn       net.Conn
}

func (s *syslogSink) Write(ctx context.Context, e Entry, line string) error {
	frame := Syslog(e, s.host, line)
	for {
		if s.conn == nil {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", s.addr)
			if err != nil {
				if !s.retry || ctx.Err() != nil {
					return fmt.Errorf("syslog %s: %w", s.addr, err)
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("syslog %s: %w", s.addr, ctx.Err())
				case <-time.After(s.every):
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
