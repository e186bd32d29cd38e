// Package chatdesk is the core's part of sessions in chat: a project's
// Slack app configured by its admins (credentials sealed, never shown
// again), Slack users linked to Paddock users by a one-time code the
// person confirms as themselves, the person a Slack user acts as, the
// threads sessions are bound to and what the relay posted in them, and
// the deliveries seen (a replay is refused). Package slackbot is the
// Slack side; it reaches the store only through here.
package chatdesk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Store is what the desk keeps and reads.
type Store interface {
	store.Chats
	GetSession(ctx context.Context, id string) (session.Session, error)
	GetAgent(ctx context.Context, project, name string) (spec.Record, error)
	ListEvents(ctx context.Context, sessionID string, after int64, limit int) ([]session.Event, error)
	AppendEvent(ctx context.Context, e session.Event) (session.Event, error)
	Subscribe(sessionID string) (<-chan struct{}, func())
	GetApproval(ctx context.Context, id string) (session.Approval, error)
	GetPark(ctx context.Context, id string) (session.Park, error)
}

// Service is the chat use cases.
type Service struct {
	Store  Store
	Access *access.Service
	// Key seals and opens the apps' credentials.
	Key interface {
		Encrypt(plain, ad []byte) []byte
		Decrypt(sealed, ad []byte) ([]byte, error)
	}
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func secretsAD(project string) []byte { return []byte("chat-app:" + project) }

// Configure sets a project's Slack app (its admins only): the
// workspace, the channels mapped to its agents, the credentials sealed.
func (s *Service) Configure(ctx context.Context, p identity.Principal, project string, req wire.SlackAppRequest) (chat.App, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return chat.App{}, err
	}
	a := chat.App{Project: project, Team: req.Team, Channels: req.Channels, Socket: req.AppToken != "", CreatedBy: p.User}
	sec := chat.Secrets{BotToken: req.BotToken, SigningSecret: req.SigningSecret, AppToken: req.AppToken}
	if err := chat.Check(a, sec); err != nil {
		return a, fmt.Errorf("%w: Slack app of project %s: %w", errdefs.ErrInvalid, project, err)
	}
	for i, c := range a.Channels {
		if c.Agent != "" {
			if _, err := s.Store.GetAgent(ctx, project, c.Agent); err != nil {
				return a, fmt.Errorf("%w: channel %s: agent %q is not applied in project %s (paddock apply -f AGENT.yaml first)", errdefs.ErrInvalid, c.ID, c.Agent, project)
			}
		}
		switch c.Approver {
		case "":
			a.Channels[i].Approver = chat.ApproverRequester
		case chat.ApproverRequester, chat.ApproverMembers:
		default:
			if err := s.Access.CheckApprover(ctx, project, c.Approver); err != nil {
				return a, fmt.Errorf("channel %s: %w", c.ID, err)
			}
		}
	}
	plain, _ := json.Marshal(sec)
	a, err := s.Store.SetChatApp(ctx, a, s.Key.Encrypt(plain, secretsAD(project)))
	if err != nil {
		return a, err
	}
	ids := make([]string, len(a.Channels))
	for i, c := range a.Channels {
		ids[i] = c.ID
	}
	return a, s.Access.Record(ctx, p, "slack_app_set", map[string]string{"project": project, "team": a.Team, "channels": strings.Join(ids, ","),
		"socketMode": fmt.Sprint(a.Socket)})
}

// App is a project's Slack app as its members may read it (never its
// credentials).
func (s *Service) App(ctx context.Context, p identity.Principal, project string) (chat.App, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return chat.App{}, err
	}
	a, _, err := s.Store.ChatApp(ctx, project)
	return a, err
}

// Remove deletes a project's Slack app and its credentials (its admins):
// nothing more is posted, and deliveries to it are refused.
func (s *Service) Remove(ctx context.Context, p identity.Principal, project string) error {
	if err := s.Access.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return err
	}
	if err := s.Store.RemoveChatApp(ctx, project); err != nil {
		return err
	}
	return s.Access.Record(ctx, p, "slack_app_removed", map[string]string{"project": project})
}

// Open is a project's app with its credentials, for the Slack side.
func (s *Service) Open(ctx context.Context, project string) (chat.App, chat.Secrets, error) {
	a, sealed, err := s.Store.ChatApp(ctx, project)
	if err != nil {
		return a, chat.Secrets{}, err
	}
	plain, err := s.Key.Decrypt(sealed, secretsAD(project))
	if err != nil {
		return a, chat.Secrets{}, fmt.Errorf("Slack app of project %s: its credentials do not open (the encryption key changed?): %w", project, err)
	}
	var sec chat.Secrets
	return a, sec, json.Unmarshal(plain, &sec)
}

// Apps are every project's apps (without credentials).
func (s *Service) Apps(ctx context.Context) ([]chat.App, error) { return s.Store.ChatApps(ctx) }

// NewCode is a one-time code for a Slack user of a project's app to
// link themselves with (chat.CodeTTL).
func (s *Service) NewCode(ctx context.Context, project, team, slackUser string) (string, error) {
	code, digest := chat.NewCode()
	return code, s.Store.AddChatCode(ctx, digest, chat.Link{Project: project, Team: team, SlackUser: slackUser}, s.now().Add(chat.CodeTTL))
}

// Link confirms a code as the caller: the Slack user it was given to
// acts as the caller from then on.
func (s *Service) Link(ctx context.Context, p identity.Principal, code string) (chat.Link, error) {
	if p.User == "" {
		return chat.Link{}, fmt.Errorf("%w: a link is made by a user", errdefs.ErrDenied)
	}
	l, err := s.Store.UseChatCode(ctx, chat.CodeDigest(code))
	if err != nil {
		return chat.Link{}, err
	}
	l.User = p.User
	if l, err = s.Store.LinkChatUser(ctx, l); err != nil {
		return l, err
	}
	return l, s.Access.Record(ctx, p, "slack_user_linked", map[string]string{"user": p.User, "project": l.Project, "team": l.Team, "slackUser": l.SlackUser})
}

// Links are the caller's links.
func (s *Service) Links(ctx context.Context, p identity.Principal) ([]chat.Link, error) {
	return s.Store.ChatLinks(ctx, p.User)
}

// Unlink removes one of the caller's links.
func (s *Service) Unlink(ctx context.Context, p identity.Principal, l chat.Link) error {
	l.User = p.User
	if err := s.Store.UnlinkChatUser(ctx, l); err != nil {
		return err
	}
	return s.Access.Record(ctx, p, "slack_user_unlinked", map[string]string{"user": p.User, "project": l.Project, "team": l.Team, "slackUser": l.SlackUser})
}

// ErrUnlinked is a Slack user no Paddock user confirmed.
var ErrUnlinked = errors.New("this Slack user is not linked to a Paddock user")

// Who is the Paddock user a Slack user of a project's app acts as
// (authenticated by "slack:TEAM/USER"): ErrUnlinked when none, ErrDenied
// when that user was revoked.
func (s *Service) Who(ctx context.Context, project, team, slackUser string) (identity.Principal, error) {
	u, err := s.Store.ChatUser(ctx, project, team, slackUser)
	if errors.Is(err, errdefs.ErrNotFound) {
		return identity.Principal{}, ErrUnlinked
	}
	if err != nil {
		return identity.Principal{}, err
	}
	return s.Access.Principal(ctx, u, "slack:"+team+"/"+slackUser)
}

// DeliveryKeep is how long a delivery's signature is remembered: past
// it, its timestamp is too old to be accepted anyway.
const DeliveryKeep = 10 * time.Minute

// Seen records a delivery's digest; true when it was seen before.
func (s *Service) Seen(ctx context.Context, digest string) (bool, error) {
	return s.Store.SeenDelivery(ctx, digest, DeliveryKeep)
}

// Threads are the bound threads, read and written by the relay.
func (s *Service) Threads() Threads { return Threads{s} }

// Threads is the bound threads' part of the desk.
type Threads struct{ s *Service }

// Bind binds a session to a thread.
func (t Threads) Bind(ctx context.Context, th chat.Thread) (chat.Thread, error) {
	return t.s.Store.BindThread(ctx, th)
}

// At is the thread's session, if any.
func (t Threads) At(ctx context.Context, team, channel, ts string) (chat.Thread, error) {
	return t.s.Store.ThreadAt(ctx, team, channel, ts)
}

// Of is the session's thread, if any.
func (t Threads) Of(ctx context.Context, sessionID string) (chat.Thread, error) {
	return t.s.Store.ThreadOf(ctx, sessionID)
}

// Open are the threads whose session's last word is not posted yet.
func (t Threads) Open(ctx context.Context) ([]chat.Thread, error) { return t.s.Store.OpenThreads(ctx) }

// Lease gives owner the relaying of a thread for d.
func (t Threads) Lease(ctx context.Context, sessionID, owner string, d time.Duration) (bool, error) {
	return t.s.Store.LeaseThread(ctx, sessionID, owner, t.s.now().Add(d))
}

// Save records what owner relayed.
func (t Threads) Save(ctx context.Context, th chat.Thread, owner string) error {
	return t.s.Store.SaveThread(ctx, th, owner)
}

// Session is a bound session as it stands.
func (t Threads) Session(ctx context.Context, id string) (session.Session, error) {
	return t.s.Store.GetSession(ctx, id)
}

// Events are a bound session's transcript events after seq.
func (t Threads) Events(ctx context.Context, id string, after int64, limit int) ([]session.Event, error) {
	return t.s.Store.ListEvents(ctx, id, after, limit)
}

// Subscribe wakes the caller when a bound session's transcript grows.
func (t Threads) Subscribe(id string) (<-chan struct{}, func()) { return t.s.Store.Subscribe(id) }

// Approval is one of a bound session's approvals, or of a session it
// delegated (at any depth), whose calls its thread is asked for too.
func (t Threads) Approval(ctx context.Context, sessionID, id string) (session.Approval, error) {
	a, err := t.s.Store.GetApproval(ctx, id)
	if err != nil {
		return a, err
	}
	for at, depth := a.SessionID, 0; at != "" && depth <= maxDepth; depth++ {
		if at == sessionID {
			return a, nil
		}
		x, err := t.s.Store.GetSession(ctx, at)
		if err != nil {
			return session.Approval{}, err
		}
		at = x.StartedBy()
	}
	return session.Approval{}, fmt.Errorf("approval %s: %w", id, errdefs.ErrNotFound)
}

// maxDepth bounds the walk from a delegated session up to its thread's.
const maxDepth = 16

// Park is one of a bound session's parks.
func (t Threads) Park(ctx context.Context, sessionID, id string) (session.Park, error) {
	p, err := t.s.Store.GetPark(ctx, id)
	if err == nil && p.SessionID != sessionID {
		return session.Park{}, fmt.Errorf("park %s: %w", id, errdefs.ErrNotFound)
	}
	return p, err
}

// Note writes a notice into a bound session's transcript, once per key:
// what the person following it elsewhere should know of its thread (a
// post Slack never took).
func (t Threads) Note(ctx context.Context, sessionID, key, text string) error {
	data, _ := json.Marshal(session.TextData{Text: text, Sender: &session.Sender{Kind: session.SenderSystem, ID: "slack"}})
	_, err := t.s.Store.AppendEvent(ctx, session.Event{SessionID: sessionID, Kind: session.EventNotice, Key: "slack:" + key, Data: data})
	return err
}
