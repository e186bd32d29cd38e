package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/paddock-dev/paddock/internal/poll"
	"github.com/paddock-dev/paddock/internal/secret"
)

// poster posts to Slack for the projects' apps: every text redacted
// first (a detected secret never reaches Slack), each call retried with
// backoff while Slack fails or asks to slow down, then given up on.
type poster struct {
	apiURL string
	http   *http.Client
	// attempts and backoff bound the retries: at most attempts calls,
	// waiting backoff, then twice as long, … (at most a minute), or as
	// long as Slack's Retry-After says.
	attempts int
	backoff  time.Duration

	mu      sync.Mutex
	clients map[string]*slack.Client // by bot token
}

func (p *poster) client(token string) *slack.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[token]; ok {
		return c
	}
	opts := []slack.Option{}
	if p.apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(p.apiURL))
	}
	if p.http != nil {
		opts = append(opts, slack.OptionHTTPClient(p.http))
	}
	if p.clients == nil {
		p.clients = map[string]*slack.Client{}
	}
	c := slack.New(token, opts...)
	p.clients[token] = c
	return c
}

// redact is m with every detected secret replaced, in its text and in
// every string of its blocks.
func redact(m message) (message, error) {
	m.Text, _ = secret.Redact(m.Text)
	if len(m.Blocks) == 0 {
		return m, nil
	}
	raw, err := json.Marshal(slack.Blocks{BlockSet: m.Blocks})
	if err != nil {
		return m, err
	}
	clean, _ := secret.RedactJSON(raw)
	var b slack.Blocks
	if err := json.Unmarshal(clean, &b); err != nil {
		return m, fmt.Errorf("blocks after redaction: %w", err)
	}
	m.Blocks = b.BlockSet
	return m, nil
}

func (m message) options() []slack.MsgOption {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false)}
	if len(m.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(m.Blocks...))
	}
	return opts
}

// post posts m in a thread (ts "": a new message in the channel) and
// returns the message's ts.
func (p *poster) post(ctx context.Context, token, channel, thread string, m message) (string, error) {
	m, err := redact(m)
	if err != nil {
		return "", err
	}
	opts := m.options()
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	var ts string
	err = p.retry(ctx, func() error {
		var err error
		_, ts, err = p.client(token).PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

// edit replaces message ts with m.
func (p *poster) edit(ctx context.Context, token, channel, ts string, m message) error {
	m, err := redact(m)
	if err != nil {
		return err
	}
	return p.retry(ctx, func() error {
		_, _, _, err := p.client(token).UpdateMessageContext(ctx, channel, ts, m.options()...)
		return err
	})
}

// tell shows user alone a message in a channel (in a thread when
// thread is set).
func (p *poster) tell(ctx context.Context, token, channel, thread, user, text string) error {
	m, err := redact(message{Text: text, Blocks: []slack.Block{section(text)}})
	if err != nil {
		return err
	}
	opts := m.options()
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	return p.retry(ctx, func() error {
		_, err := p.client(token).PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
}

// errPermanent is a Slack answer no retry changes (a bad token, a
// channel the app is not in, a malformed message).
var errPermanent = errors.New("Slack refused the call")

func (p *poster) retry(ctx context.Context, call func() error) error {
	wait := p.backoff
	var err error
	for attempt := 1; ; attempt++ {
		err = call()
		if err == nil {
			return nil
		}
		var limited *slack.RateLimitedError
		var status slack.StatusCodeError
		retryable := false
		switch {
		case errors.As(err, &limited):
			wait, retryable = max(wait, limited.RetryAfter), true
		case errors.As(err, &status):
			retryable = status.Code >= 500
		default:
			retryable = isTransport(err)
		}
		if !retryable {
			// Slack answered and said no: retrying says no again.
			return fmt.Errorf("%w: %w", errPermanent, err)
		}
		if attempt >= p.attempts {
			return fmt.Errorf("Slack did not take it after %d attempts: %w", attempt, err)
		}
		if poll.Sleep(ctx, wait) != nil {
			return ctx.Err()
		}
		wait = min(2*wait, time.Minute)
	}
}

// isTransport says err is the connection's, not Slack's answer.
func isTransport(err error) bool {
	var slackErr slack.SlackErrorResponse
	return !errors.As(err, &slackErr)
}
