package slackbot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/terminal"
)

// Relay posts what each bound session does into its thread: the status
// message edited in place (at most every chat.StatusEvery), one message
// per turn, every approval, park and question with its buttons (edited
// once decided, wherever), and the last word. A thread is relayed by one
// node at a time (a lease in the store); what was posted is recorded
// after each post, so a node that dies posts at most one message twice.
// Slack failing never holds a session: a post is retried with backoff,
// then dropped with a note in the session's transcript.
type Relay struct {
	Bot *Bot
	// Node names this node's leases.
	Node string
	// Every is how often open threads are looked for and a quiet
	// thread's session read again (default 1 s).
	Every time.Duration
}

// leaseFor is how long a node holds a thread's relaying between renewals:
// longer than a post's retries.
const leaseFor = 3 * time.Minute

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	every := r.Every
	if every <= 0 {
		every = time.Second
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	running := map[string]bool{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		threads, err := r.Bot.Desk.Threads().Open(ctx)
		if err != nil && ctx.Err() == nil {
			r.Bot.log().Warn("Slack relay: open threads", "err", err)
		}
		for _, th := range threads {
			mu.Lock()
			if !running[th.SessionID] {
				running[th.SessionID] = true
				wg.Go(func() {
					if err := r.follow(ctx, th.SessionID, every); err != nil && ctx.Err() == nil {
						r.Bot.log().Warn("Slack relay", "session", th.SessionID, "err", err)
					}
					mu.Lock()
					delete(running, th.SessionID)
					mu.Unlock()
				})
			}
			mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow relays one thread while this node holds its lease.
func (r *Relay) follow(ctx context.Context, id string, every time.Duration) error {
	wake, cancel := r.Bot.Desk.Threads().Subscribe(id)
	defer cancel()
	for {
		ok, err := r.Bot.Desk.Threads().Lease(ctx, id, r.Node, leaseFor)
		if err != nil || !ok {
			return err
		}
		th, err := r.Bot.Desk.Threads().Of(ctx, id)
		if err != nil || th.Done {
			return err
		}
		app, sec, err := r.Bot.Desk.Open(ctx, th.Project)
		if errors.Is(err, errdefs.ErrNotFound) {
			// The app was removed: nothing more is posted.
			th.Done = true
			return r.Bot.Desk.Threads().Save(ctx, th, r.Node)
		}
		if err != nil {
			return err
		}
		t := &thread{Thread: th, bot: r.Bot, app: app, token: sec.BotToken, node: r.Node}
		more, err := t.step(ctx)
		if err != nil {
			return err
		}
		if err := t.save(ctx); err != nil || t.Done {
			return err
		}
		if more {
			continue
		}
		wait := every
		if t.State.StatusDue {
			wait = min(wait, max(time.Until(t.State.StatusAt.Add(chat.StatusEvery)), 10*time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// thread is one thread being relayed.
type thread struct {
	chat.Thread
	bot    *Bot
	app    chat.App
	token  string
	node   string
	x      session.Session
	pinned *policy.Policy
	// posted says something was posted or edited since the last save.
	posted bool
}

// save records what was relayed, renewing this node's lease first: a
// node that lost it stops (another relays the thread now).
func (t *thread) save(ctx context.Context) error {
	d := t.bot.Desk.Threads()
	if ok, err := d.Lease(ctx, t.SessionID, t.node, leaseFor); err != nil || !ok {
		return cmp.Or(err, fmt.Errorf("thread of session %s: the lease passed to another node", t.SessionID))
	}
	t.posted = false
	return d.Save(ctx, t.Thread, t.node)
}

// batch bounds the events dealt with between two saves.
const batch = 100

// step deals with the events after the cursor (at most batch) and the
// status message; more says there may be more to do at once.
func (t *thread) step(ctx context.Context) (more bool, err error) {
	d := t.bot.Desk.Threads()
	if t.x, err = d.Session(ctx, t.SessionID); err != nil {
		return false, err
	}
	t.pinned, _ = policy.Pinned(t.x.Policy)
	if t.State.Asks == nil {
		t.State.Asks = map[string]string{}
	}
	if t.State.Calls == nil {
		t.State.Calls = map[string]string{}
	}
	if t.State.Children == nil {
		t.State.Children = map[string]string{}
	}
	if t.State.StatusTS == "" {
		m := statusMessage(t.x, t.bot.Web)
		ts, err := t.post(ctx, "status", m)
		if err != nil {
			return false, err
		}
		t.State.StatusTS, t.State.StatusText, t.State.StatusAt = ts, m.Text, time.Now()
		if err := t.save(ctx); err != nil || t.Done {
			return false, err
		}
	}
	events, err := d.Events(ctx, t.SessionID, t.Cursor, batch)
	if err != nil {
		return false, err
	}
	for _, e := range events {
		if err := t.event(ctx, e); err != nil {
			return false, err
		}
		t.Cursor = e.Seq
		// Each post is recorded at once with the event that made it: a
		// node that dies posts at most that one again.
		if t.posted || t.Done {
			if err := t.save(ctx); err != nil || t.Done {
				return false, err
			}
		}
	}
	if err := t.status(ctx); err != nil {
		return false, err
	}
	if err := t.children(ctx); err != nil {
		return false, err
	}
	if len(events) == batch {
		return true, nil
	}
	if t.x.Status.Terminal() {
		if _, err := t.post(ctx, "final", finalMessage(t.x, t.bot.Web)); err != nil {
			return false, err
		}
		t.Done = true
	}
	return false, nil
}

// status edits the status message when what it says changed, at most
// every chat.StatusEvery.
func (t *thread) status(ctx context.Context) error {
	m := statusMessage(t.x, t.bot.Web)
	if m.Text == t.State.StatusText {
		t.State.StatusDue = false // (back to what it says)
		return nil
	}
	if time.Since(t.State.StatusAt) < chat.StatusEvery && !t.x.Status.Terminal() {
		t.State.StatusDue = true
		return nil
	}
	t.edit(ctx, "status", t.State.StatusTS, m)
	t.State.StatusText, t.State.StatusAt, t.State.StatusDue = m.Text, time.Now(), false
	return nil
}

// event posts what one transcript event calls for.
func (t *thread) event(ctx context.Context, e session.Event) error {
	switch e.Kind {
	case session.EventTurn:
		var d session.TurnData
		_ = json.Unmarshal(e.Data, &d)
		if !d.Status.Settled() {
			if t.State.TurnFrom == 0 {
				t.State.TurnFrom = e.Seq
			}
			return nil
		}
		events, err := t.turnEvents(ctx, e.TurnID, e.Seq)
		if err != nil {
			return err
		}
		m := turnMessage(events, d)
		if d.Status == session.TurnCompleted {
			if l := linkTo(t.bot.Web, "/sessions/"+t.SessionID+"/diff", "Review its changes"); l != "" {
				m.Blocks = append(m.Blocks, note(l))
			}
		}
		t.State.TurnFrom = 0
		_, err = t.post(ctx, fmt.Sprintf("turn:%d", e.Seq), m)
		return err
	case session.EventToolCall:
		var d session.ToolCallData
		if json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		if d.Approval == "" {
			d.Approval = t.State.Calls[d.ID]
		}
		if d.Approval == "" {
			return nil
		}
		key := "approval:" + d.Approval
		ts, asked := t.State.Asks[key]
		switch {
		case d.State == session.CallAwaitingApproval && !asked:
			ts, err := t.post(ctx, key, approvalMessage(t.x, d, t.pinned, t.bot.Web))
			if ts != "" {
				t.State.Asks[key], t.State.Calls[d.ID] = ts, d.Approval
			}
			return err
		case d.State != session.CallAwaitingApproval && asked:
			ap, err := t.bot.Desk.Threads().Approval(ctx, t.SessionID, d.Approval)
			if err != nil {
				return err
			}
			t.edit(ctx, key, ts, decidedMessage(d, ap))
			delete(t.State.Asks, key)
			delete(t.State.Calls, d.ID)
		}
	case session.EventPark:
		var d session.ParkData
		if json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		key := "park:" + d.Park.ID
		ts, asked := t.State.Asks[key]
		switch {
		case d.Park.ResolvedAt == nil && !asked:
			ts, err := t.post(ctx, key, parkMessage(t.x, d.Park, t.bot.Web))
			if ts != "" {
				t.State.Asks[key] = ts
			}
			return err
		case d.Park.ResolvedAt != nil && asked:
			t.edit(ctx, key, ts, resolvedPark(d.Park))
			delete(t.State.Asks, key)
		}
	case session.EventChildApproval:
		var d session.ChildApproval
		if json.Unmarshal(e.Data, &d) != nil || d.Call.Approval == "" {
			return nil
		}
		key := "approval:" + d.Call.Approval
		if _, asked := t.State.Asks[key]; asked {
			return nil
		}
		child, err := t.bot.Desk.Threads().Session(ctx, d.Session)
		if err != nil {
			return err
		}
		pinned, _ := policy.Pinned(child.Policy)
		m := approvalMessage(child, d.Call, pinned, t.bot.Web)
		m.Blocks = append([]slack.Block{note(fmt.Sprintf("A session this one delegated (`%s`: %s) asks:", d.Session, mrkdwn(terminal.OneLine(d.Task, 200))))}, m.Blocks...)
		ts, err := t.post(ctx, key, m)
		if ts != "" {
			t.State.Asks[key] = ts
			t.State.Children[d.Call.Approval] = d.Call.Name
		}
		return err
	case session.EventQuestion:
		var q session.Question
		if json.Unmarshal(e.Data, &q) != nil {
			return nil
		}
		_, err := t.post(ctx, "question:"+q.ToolCallID, questionMessage(q))
		return err
	}
	return nil
}

// children edits the messages asking for delegated sessions' calls once
// decided: their states are in the children's transcripts, so their
// approvals are read again at each step.
func (t *thread) children(ctx context.Context) error {
	for id, tool := range t.State.Children {
		ap, err := t.bot.Desk.Threads().Approval(ctx, t.SessionID, id)
		if err != nil {
			return err
		}
		if ap.Status == session.ApprovalPending {
			continue
		}
		key := "approval:" + id
		t.edit(ctx, key, t.State.Asks[key], decidedMessage(session.ToolCallData{Name: tool, Args: ap.Args}, ap))
		delete(t.State.Asks, key)
		delete(t.State.Children, id)
	}
	return nil
}

// turnEvents are a turn's events up to seq.
func (t *thread) turnEvents(ctx context.Context, turn string, upTo int64) ([]session.Event, error) {
	var out []session.Event
	after := max(t.State.TurnFrom-1, 0)
	for after < upTo {
		page, err := t.bot.Desk.Threads().Events(ctx, t.SessionID, after, 500)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if e.Seq > upTo {
				return out, nil
			}
			if e.TurnID == turn {
				out = append(out, e)
			}
			after = e.Seq
		}
		if len(page) < 500 {
			break
		}
	}
	return out, nil
}

// post posts into the thread; a post Slack never took is dropped with a
// note in the transcript ("" and no error), as is one it refused.
func (t *thread) post(ctx context.Context, key string, m message) (string, error) {
	ts, err := t.bot.post().post(ctx, t.token, t.Channel, t.TS, m)
	if err == nil || ctx.Err() != nil {
		t.posted = t.posted || err == nil
		return ts, ctx.Err()
	}
	return "", t.dropped(ctx, key, err)
}

// edit edits a message of the thread, dropped likewise.
func (t *thread) edit(ctx context.Context, key, ts string, m message) {
	err := t.bot.post().edit(ctx, t.token, t.Channel, ts, m)
	t.posted = t.posted || err == nil
	if err != nil && ctx.Err() == nil {
		_ = t.dropped(ctx, key+":edit", err)
	}
}

// closed are Slack's refusals that no later post in the thread escapes:
// the app is out of the channel, the channel is gone, the token is dead.
var closed = map[string]bool{"channel_not_found": true, "not_in_channel": true, "is_archived": true, "invalid_auth": true,
	"account_inactive": true, "token_revoked": true, "token_expired": true, "not_authed": true, "missing_scope": true, "team_access_not_granted": true}

func (t *thread) dropped(ctx context.Context, key string, err error) error {
	t.State.Dropped++
	t.bot.log().Warn("Slack post dropped", "session", t.SessionID, "what", key, "err", err)
	var refusal slack.SlackErrorResponse
	if errors.As(err, &refusal) && closed[refusal.Err] {
		// Posting on would fail the same way at every step: the thread
		// is given up, and the transcript says why.
		t.Done = true
		return t.bot.Desk.Threads().Note(ctx, t.SessionID, "closed",
			fmt.Sprintf("Slack refuses this session's thread (%s): nothing more is posted there; follow it in Paddock", refusal.Err))
	}
	return t.bot.Desk.Threads().Note(ctx, t.SessionID, "dropped:"+key, fmt.Sprintf("A message to this session's Slack thread was dropped (%s): %v", key, err))
}
