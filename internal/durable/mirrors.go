package durable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Mirrors fetch the remote repositories sessions work on (package
// mirror).
type Mirrors interface {
	Mirror(ctx context.Context, src mirror.Source, ref, commit string) (string, error)
}

// DefaultForgeWait is how long a session's provisioning waits for a
// forge that does not answer before the session fails.
const DefaultForgeWait = time.Hour

// forgeRetry is the longest wait between two fetches from a forge that
// does not answer (the first is a second, then each twice the last).
const forgeRetry = time.Minute

// cloneRemote makes session s's copy at dir from its remote repository,
// at the commit its ref resolved to when it was created: from this
// node's mirror, fetched first when it lacks the commit. A forge that
// does not answer is waited for (ForgeWait, the transcript says so) and
// tried again, as a provider's outage is; a refusal fails at once.
func (a *Activities) cloneRemote(ctx context.Context, s session.Session, dir string) (string, error) {
	if a.Mirrors == nil {
		return "", nonRetryable(fmt.Errorf("this server fetches no remote repositories (its sandbox is unavailable)"))
	}
	src, err := mirror.SourceOf(ctx, a.Store, a.ContentKey, s.Project, *s.Remote)
	if err != nil {
		return "", nonRetryable(err)
	}
	limit := cmp.Or(a.ForgeWait, DefaultForgeWait)
	start := a.Now()
	from, err := a.Mirrors.Mirror(ctx, src, s.Remote.Ref, s.Remote.Commit)
	for wait := time.Second; errors.Is(err, mirror.ErrUnreachable); wait = min(2*wait, forgeRetry) {
		if a.Now().Sub(start) >= limit {
			return "", nonRetryable(fmt.Errorf("%w; it did not answer for %s", err, limit))
		}
		if wait == time.Second {
			text := fmt.Sprintf("%s does not answer (%v): waiting for it, up to %s, before the session starts", s.Remote.URL, err, limit)
			data, _ := json.Marshal(session.TextData{Text: text})
			if _, err := a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, Kind: session.EventNotice, Key: "forge-wait", Data: data}); err != nil {
				return "", err
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
		from, err = a.Mirrors.Mirror(ctx, src, s.Remote.Ref, s.Remote.Commit)
	}
	if err != nil {
		return "", nonRetryable(err)
	}
	if err := workspace.CloneAt(ctx, from, s.Remote.Commit, dir); err != nil {
		return "", err
	}
	what := s.Remote.URL
	if s.Remote.Ref != "" {
		what += " at " + s.Remote.Ref
	}
	return what + " (" + clip.ID(s.Remote.Commit) + ")", nil
}
