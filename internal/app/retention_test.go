package app_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestAuditContentRetention: a project that retains content keeps each
// entry's content encrypted apart from the log; `audit show --content`
// shows it checked against the entry's digest; a content moved to another
// entry is refused; at the end of its retention it is deleted and the log
// still verifies. A project that retains none keeps none.
func TestAuditContentRetention(t *testing.T) {
	ctx := context.Background()
	project := unique("retained")
	code, out := paddock(t, "audit", "retain", project, "1h")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "keeps audit content for 1h0m0s")
	code, out = paddock(t, "audit", "retain", project)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "1h0m0s")
	code, out = paddock(t, "audit", "retain", project, "soon")
	require.Equal(t, 2, code, out)

	name := unique("kept")
	applyAgent(t, name, script(t, "work.yaml"), "project: "+project+"\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Project: project, Repo: gitRepo(t), Message: "process the quarterly notes"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)

	code, out = paddock(t, "audit", "show", x.ID)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "quarterly", "without --content, metadata only")
	code, out = paddock(t, "audit", "show", x.ID, "--content")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "process the quarterly notes")

	db := openLive(t)
	defer db.Close()
	var rows int
	var sealed []byte
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_content WHERE session_id = ?`, x.ID).Scan(&rows))
	log, err := api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	require.Equal(t, len(log), rows, "every entry's content kept")
	require.NoError(t, db.QueryRowContext(ctx, `SELECT sealed FROM audit_content WHERE session_id = ? AND seq = 2`, x.ID).Scan(&sealed))
	require.NotContains(t, string(sealed), "quarterly", "kept encrypted")

	// A content moved onto another entry does not open there.
	_, err = db.ExecContext(ctx, `UPDATE audit_content SET sealed = ? WHERE session_id = ? AND seq = 3`, sealed, x.ID)
	require.NoError(t, err)
	withContent, err := api.Audit().Log(ctx, x.ID, true)
	require.NoError(t, err)
	require.Contains(t, withContent[2].ContentProblem, "decrypt")
	require.Empty(t, withContent[2].Content)
	require.NotEmpty(t, withContent[1].Content)

	// The end of the retention deletes it (the sweeper's call); the log
	// itself is untouched and still verifies.
	st, err := sqlstore.Open(ctx, liveDSN, nil)
	require.NoError(t, err)
	n, err := st.ExpireAuditContent(ctx, time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.GreaterOrEqual(t, n, int64(rows))
	code, out = paddock(t, "audit", "show", x.ID, "--content")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "quarterly")
	require.Contains(t, out, "no content retained")
	code, out = paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 0, code, out)

	// The default project keeps none.
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit_content a JOIN sessions s ON s.id = a.session_id WHERE s.project = 'default'`).Scan(&rows))
	require.Zero(t, rows)
}

// TestAuditExportFollowsToSyslog: `audit export --follow --syslog` sends
// every entry as an RFC 5424 frame over TCP, goes on with entries written
// afterwards, and after the syslog server drops the connection reconnects
// and sends on without losing or repeating an entry.
func TestAuditExportFollowsToSyslog(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var mu sync.Mutex
	frames := map[string]int{} // session/seq → times received
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				r := bufio.NewReader(c)
				for {
					n, err := r.ReadString(' ')
					if err != nil {
						return
					}
					size, err := strconv.Atoi(strings.TrimSpace(n))
					if err != nil {
						t.Errorf("not octet counted: %q", n)
						return
					}
					body := make([]byte, size)
					if _, err := io.ReadFull(r, body); err != nil {
						return
					}
					msg := string(body)
					if !strings.HasPrefix(msg, "<86>1 ") || !strings.Contains(msg, " paddock - audit - CEF:0|Paddock|") {
						t.Errorf("frame %q", msg)
					}
					sess := between(msg, "cs1=", " ")
					seq := between(msg, "cn1=", " ")
					mu.Lock()
					frames[sess+"/"+seq]++
					mu.Unlock()
				}
			}()
		}
	}()
	count := func(id string) (n, dup int) {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range frames {
			if strings.HasPrefix(k, id+"/") {
				n++
				if v > 1 {
					dup++
				}
			}
		}
		return n, dup
	}

	name := unique("followed")
	applyAgent(t, name, script(t, "work.yaml"), "")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "process the notes"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)

	fctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		env := map[string]string{"PADDOCK_SERVER": shared.URL, "PADDOCK_TOKEN": adminToken}
		done <- cli.Run(fctx, []string{"audit", "export", "--follow", "--format", "cef", "--since", "10m", "--syslog", "tcp://" + ln.Addr().String()},
			cli.IO{Server: app.CLI, In: strings.NewReader(""), Out: &errOut, Err: &errOut, Getenv: func(k string) string { return env[k] }})
	}()
	log, err := api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	waitFor(t, "the session's entries at the syslog server", func() (bool, error) { n, _ := count(x.ID); return n >= len(log), nil })

	// The syslog server drops the connection; entries written next still
	// arrive, once each.
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	before := len(log)
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "one more thing"})
	waitFor(t, "the follow-up turn", func() (bool, error) {
		s, err := api.Sessions().Get(ctx, x.ID)
		if err != nil {
			return false, err
		}
		log, err = api.Audit().Log(ctx, x.ID, false)
		if err != nil {
			return false, err
		}
		last := log[len(log)-1]
		return len(log) > before+3 && s.Status == session.StatusAwaiting && last.Kind == "status" && last.Meta["status"] == string(session.StatusAwaiting), nil
	})
	waitFor(t, "the new entries at the syslog server", func() (bool, error) { n, _ := count(x.ID); return n >= len(log), nil })
	n, dup := count(x.ID)
	require.Equal(t, len(log), n, "every entry, no other")
	require.Zero(t, dup, "no entry sent twice")
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not stop when interrupted")
	}
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
