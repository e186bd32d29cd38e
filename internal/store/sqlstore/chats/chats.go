// Package chats is the store's chat role (store.Chats) over the
// database the store's other roles share: projects' Slack apps, linked
// users and their codes, bound threads, deliveries seen.
package chats

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/store/sqlstore/dialect"
)

// Chats implements store.Chats.
type Chats struct {
	DB  *dialect.DB
	Now func() time.Time
}

// timeFormat is the store's: fixed width, so that text sorts as time.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func (s Chats) at(t time.Time) string { return t.UTC().Format(timeFormat) }

func parse(v string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

func notFound(what string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, errdefs.ErrNotFound)
	}
	return err
}

type scanner = dialect.Scanner

const appCols = `project, team, channels, socket, created_by, created_at`

func scanApp(r scanner, sealed *[]byte) (chat.App, error) {
	var a chat.App
	var channels, created string
	var socket int64
	dest := []any{&a.Project, &a.Team, &channels, &socket, &a.CreatedBy, &created}
	if sealed != nil {
		dest = append(dest, sealed)
	}
	if err := r.Scan(dest...); err != nil {
		return a, err
	}
	_ = json.Unmarshal([]byte(channels), &a.Channels)
	a.Socket, a.CreatedAt = socket != 0, parse(created)
	return a, nil
}

// SetChatApp implements store.Chats.
func (s Chats) SetChatApp(ctx context.Context, a chat.App, sealed []byte) (chat.App, error) {
	channels, _ := json.Marshal(a.Channels)
	a.CreatedAt = s.Now().UTC()
	_, err := s.DB.ExecContext(ctx, `INSERT INTO chat_apps (project, team, channels, socket, sealed, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (project) DO UPDATE SET team = excluded.team, channels = excluded.channels, socket = excluded.socket, sealed = excluded.sealed,
		created_by = excluded.created_by, created_at = excluded.created_at`,
		a.Project, a.Team, string(channels), a.Socket, sealed, a.CreatedBy, s.at(a.CreatedAt))
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "foreign key") {
		return a, fmt.Errorf("project %q: %w", a.Project, errdefs.ErrNotFound)
	}
	return a, err
}

// ChatApp implements store.Chats.
func (s Chats) ChatApp(ctx context.Context, project string) (chat.App, []byte, error) {
	var sealed []byte
	a, err := scanApp(s.DB.QueryRowContext(ctx, `SELECT `+appCols+`, sealed FROM chat_apps WHERE project = ?`, project), &sealed)
	return a, sealed, notFound(fmt.Sprintf("project %s has no Slack app", project), err)
}

// ChatApps implements store.Chats.
func (s Chats) ChatApps(ctx context.Context) ([]chat.App, error) {
	return dialect.QueryAll(ctx, s.DB, func(r scanner) (chat.App, error) { return scanApp(r, nil) }, `SELECT `+appCols+` FROM chat_apps ORDER BY project`)
}

// RemoveChatApp implements store.Chats.
func (s Chats) RemoveChatApp(ctx context.Context, project string) error {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM chat_apps WHERE project = ?`, project)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("project %s has no Slack app: %w", project, errdefs.ErrNotFound)
	}
	return nil
}

// AddChatCode implements store.Chats.
func (s Chats) AddChatCode(ctx context.Context, digest string, l chat.Link, expires time.Time) error {
	// Codes expired are forgotten as new ones come.
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM chat_codes WHERE expires_at < ?`, s.at(s.Now())); err != nil {
		return err
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO chat_codes (digest, project, team, slack_user, expires_at) VALUES (?, ?, ?, ?, ?)`,
		digest, l.Project, l.Team, l.SlackUser, s.at(expires))
	return err
}

// UseChatCode implements store.Chats.
func (s Chats) UseChatCode(ctx context.Context, digest string) (chat.Link, error) {
	var l chat.Link
	err := s.DB.QueryRowContext(ctx, `DELETE FROM chat_codes WHERE digest = ? AND expires_at >= ? RETURNING project, team, slack_user`, digest, s.at(s.Now())).Scan(&l.Project, &l.Team, &l.SlackUser)
	return l, notFound("no such linking code, or it expired or was used: mention the app in Slack again for a new one", err)
}

// LinkChatUser implements store.Chats.
func (s Chats) LinkChatUser(ctx context.Context, l chat.Link) (chat.Link, error) {
	l.CreatedAt = s.Now().UTC()
	_, err := s.DB.ExecContext(ctx, `INSERT INTO chat_links (project, team, slack_user, user_name, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (project, team, slack_user) DO UPDATE SET user_name = excluded.user_name, created_at = excluded.created_at`, l.Project, l.Team, l.SlackUser, l.User, s.at(l.CreatedAt))
	return l, err
}

// ChatUser implements store.Chats.
func (s Chats) ChatUser(ctx context.Context, project, team, slackUser string) (string, error) {
	var u string
	err := s.DB.QueryRowContext(ctx, `SELECT user_name FROM chat_links WHERE project = ? AND team = ? AND slack_user = ?`, project, team, slackUser).Scan(&u)
	return u, notFound("Slack user "+slackUser+" is not linked", err)
}

// ChatLinks implements store.Chats.
func (s Chats) ChatLinks(ctx context.Context, user string) ([]chat.Link, error) {
	return dialect.QueryAll(ctx, s.DB, func(r scanner) (chat.Link, error) {
		var l chat.Link
		var created string
		err := r.Scan(&l.Project, &l.Team, &l.SlackUser, &l.User, &created)
		l.CreatedAt = parse(created)
		return l, err
	}, `SELECT project, team, slack_user, user_name, created_at FROM chat_links WHERE user_name = ? ORDER BY project, team, slack_user`, user)
}

// UnlinkChatUser implements store.Chats.
func (s Chats) UnlinkChatUser(ctx context.Context, l chat.Link) error {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM chat_links WHERE project = ? AND team = ? AND slack_user = ? AND user_name = ?`, l.Project, l.Team, l.SlackUser, l.User)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s has no link to Slack user %s of %s in project %s: %w", l.User, l.SlackUser, l.Team, l.Project, errdefs.ErrNotFound)
	}
	return nil
}

const threadCols = `session_id, project, team, channel, ts, cursor, state, done`

func scanThread(r scanner) (chat.Thread, error) {
	var t chat.Thread
	var state string
	var done int64
	if err := r.Scan(&t.SessionID, &t.Project, &t.Team, &t.Channel, &t.TS, &t.Cursor, &state, &done); err != nil {
		return t, err
	}
	_ = json.Unmarshal([]byte(state), &t.State)
	t.Done = done != 0
	return t, nil
}

// BindThread implements store.Chats.
func (s Chats) BindThread(ctx context.Context, t chat.Thread) (chat.Thread, error) {
	state, _ := json.Marshal(t.State)
	_, err := s.DB.ExecContext(ctx, `INSERT INTO chat_threads (session_id, project, team, channel, ts, cursor, state, done) VALUES (?, ?, ?, ?, ?, 0, ?, 0)
		ON CONFLICT DO NOTHING`, t.SessionID, t.Project, t.Team, t.Channel, t.TS, string(state))
	if err != nil {
		return t, err
	}
	got, err := s.ThreadOf(ctx, t.SessionID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return t, fmt.Errorf("thread %s of %s is bound to another session: %w", t.TS, t.Channel, errdefs.ErrConflict)
	}
	if err == nil && (got.Team != t.Team || got.Channel != t.Channel || got.TS != t.TS) {
		return got, fmt.Errorf("session %s is bound to another thread: %w", t.SessionID, errdefs.ErrConflict)
	}
	return got, err
}

// ThreadOf implements store.Chats.
func (s Chats) ThreadOf(ctx context.Context, sessionID string) (chat.Thread, error) {
	t, err := scanThread(s.DB.QueryRowContext(ctx, `SELECT `+threadCols+` FROM chat_threads WHERE session_id = ?`, sessionID))
	return t, notFound("session "+sessionID+" is bound to no thread", err)
}

// ThreadAt implements store.Chats.
func (s Chats) ThreadAt(ctx context.Context, team, channel, ts string) (chat.Thread, error) {
	t, err := scanThread(s.DB.QueryRowContext(ctx, `SELECT `+threadCols+` FROM chat_threads WHERE team = ? AND channel = ? AND ts = ?`, team, channel, ts))
	return t, notFound("no session is bound to thread "+ts, err)
}

// OpenThreads implements store.Chats.
func (s Chats) OpenThreads(ctx context.Context) ([]chat.Thread, error) {
	return dialect.QueryAll(ctx, s.DB, scanThread, `SELECT `+threadCols+` FROM chat_threads WHERE done = 0 ORDER BY session_id`)
}

// LeaseThread implements store.Chats.
func (s Chats) LeaseThread(ctx context.Context, sessionID, owner string, until time.Time) (bool, error) {
	res, err := s.DB.ExecContext(ctx, `UPDATE chat_threads SET lease_owner = ?, lease_until = ? WHERE session_id = ? AND (lease_owner = ? OR lease_until < ?)`,
		owner, s.at(until), sessionID, owner, s.at(s.Now()))
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SaveThread implements store.Chats.
func (s Chats) SaveThread(ctx context.Context, t chat.Thread, owner string) error {
	state, _ := json.Marshal(t.State)
	res, err := s.DB.ExecContext(ctx, `UPDATE chat_threads SET cursor = ?, state = ?, done = ? WHERE session_id = ? AND lease_owner = ?`,
		t.Cursor, string(state), t.Done, t.SessionID, owner)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("thread of session %s: the lease passed to another node: %w", t.SessionID, errdefs.ErrConflict)
	}
	return nil
}

// SeenDelivery implements store.Chats.
func (s Chats) SeenDelivery(ctx context.Context, digest string, keep time.Duration) (bool, error) {
	now := s.Now()
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM chat_deliveries WHERE seen_at < ?`, s.at(now.Add(-keep))); err != nil {
		return false, err
	}
	res, err := s.DB.ExecContext(ctx, `INSERT INTO chat_deliveries (digest, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, digest, s.at(now))
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 0, nil
}
