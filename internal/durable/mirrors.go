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

// cloneRemote makes session s's copy at dir from its remote repository,
// at the commit its ref resolved to when it was created: from this
// node's mirror, fetched first when it lacks the commit. A forge that
// does not answer is waited for (ForgeWait, the transcript says so) and
// tried again, as a provider's outage is; a refusal fails at once.
func (a *Activities) cloneRemote(ctx context.Context, s session.Session, dir string) (string, error) {
	if a.Mirrors == nil {
		return "", nonRetryable(fmt.Errorf("this server fetches no remote repositories: %w", cmp.Or(a.FetchErr, errors.New("its sandbox is unavailable"))))
	}
	src, err := mirror.SourceOf(ctx, a.Store, a.ContentKey, s.Project, *s.Remote)
	if err != nil {
		return "", nonRetryable(err)
	}
	limit := cmp.Or(a.ForgeWait, DefaultForgeWait)
	var noted error // the store failing: tried again, as any store step
	from, err := mirror.Patiently(ctx, limit, a.Now, func(err error) error {
		data, _ := json.Marshal(session.TextData{Text: fmt.Sprintf("%s does not answer (%v): waiting for it, up to %s, before the session starts", s.Remote.URL, err, limit)})
		_, noted = a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, Kind: session.EventNotice, Key: "forge-wait", Data: data})
		return noted
	}, func() (string, error) { return a.Mirrors.Mirror(ctx, src, s.Remote.Ref, s.Remote.Commit) })
	if noted != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "", err
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
