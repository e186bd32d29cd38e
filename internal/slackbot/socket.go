package slackbot

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/poll"
)

// Sockets keeps a Socket Mode connection open to Slack for each app
// given an app-level token, on every node (Slack hands each delivery to
// one of an app's connections): its deliveries come over it,
// authenticated by the token, and are handled as those of the Events
// API are. Apps set, changed or removed are followed every Every.
type Sockets struct {
	Bot   *Bot
	Every time.Duration
}

// Run keeps the connections until ctx ends.
func (s *Sockets) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	type conn struct {
		key    [32]byte
		cancel func()
	}
	open := map[string]conn{}
	var wg sync.WaitGroup
	defer func() {
		for _, c := range open {
			c.cancel()
		}
		wg.Wait()
	}()
	for {
		apps, err := s.Bot.Desk.Apps(ctx)
		if err != nil && ctx.Err() == nil {
			s.Bot.log().Warn("Slack Socket Mode: apps", "err", err)
		}
		want := map[string]bool{}
		for _, a := range apps {
			if !a.Socket {
				continue
			}
			app, sec, err := s.Bot.Desk.Open(ctx, a.Project)
			if err != nil {
				s.Bot.log().Warn("Slack Socket Mode", "project", a.Project, "err", err)
				continue
			}
			want[a.Project] = true
			key := sha256.Sum256([]byte(app.Team + "\x00" + sec.BotToken + "\x00" + sec.AppToken))
			if c, ok := open[a.Project]; ok && c.key == key {
				continue
			} else if ok {
				c.cancel()
			}
			cctx, cancel := context.WithCancel(ctx)
			open[a.Project] = conn{key: key, cancel: cancel}
			wg.Go(func() { s.serve(cctx, app, sec) })
		}
		if err == nil {
			for project, c := range open {
				if !want[project] {
					c.cancel()
					delete(open, project)
				}
			}
		}
		if poll.Sleep(ctx, every) != nil {
			return
		}
	}
}

// serve holds one app's connection, opened again (with backoff) when it
// drops, until ctx ends.
func (s *Sockets) serve(ctx context.Context, app chat.App, sec chat.Secrets) {
	opts := []slack.Option{slack.OptionAppLevelToken(sec.AppToken)}
	if s.Bot.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(s.Bot.APIURL))
	}
	if s.Bot.HTTP != nil {
		opts = append(opts, slack.OptionHTTPClient(s.Bot.HTTP))
	}
	wait := time.Second
	for ctx.Err() == nil {
		client := socketmode.New(slack.New(sec.BotToken, opts...))
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); s.deliveries(cctx, client, app, sec) }()
		err := client.RunContext(cctx)
		cancel()
		<-done
		if ctx.Err() != nil {
			return
		}
		s.Bot.log().Warn("Slack Socket Mode connection ended; opening it again", "project", app.Project, "err", err, "in", wait)
		if poll.Sleep(ctx, wait) != nil {
			return
		}
		wait = min(2*wait, 5*time.Minute)
	}
}

// deliveries acknowledges each delivery of the connection, then handles
// it as a delivery of the Events API, under the app as it is set now (its
// channels, their agents and approvers).
func (s *Sockets) deliveries(ctx context.Context, client *socketmode.Client, app chat.App, _ chat.Secrets) {
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return
		case evt = <-client.Events:
		}
		if evt.Type == socketmode.EventTypeEventsAPI || evt.Type == socketmode.EventTypeInteractive {
			if evt.Request != nil {
				_ = client.Ack(*evt.Request)
			}
		}
		if err := s.deliver(ctx, app.Project, evt); err != nil {
			s.Bot.log().Warn("Slack Socket Mode delivery", "project", app.Project, "err", err)
		}
	}
}

// deliver handles one delivery; a panic is its failure alone.
func (s *Sockets) deliver(ctx context.Context, project string, evt socketmode.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	app, sec, err := s.Bot.Desk.Open(ctx, project)
	if err != nil {
		return err
	}
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
			return s.Bot.callback(ctx, app, sec, ev)
		}
	case socketmode.EventTypeInteractive:
		if cb, ok := evt.Data.(slack.InteractionCallback); ok {
			return s.Bot.interaction(ctx, app, sec, cb)
		}
	case socketmode.EventTypeInvalidAuth:
		s.Bot.log().Warn("Slack Socket Mode: the app-level token is refused; set the app again (paddock slack configure --socket-mode)", "project", app.Project)
	}
	return nil
}
