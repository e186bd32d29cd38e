package app_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestRevocationEndsOpenStreams is the attack of issue 36: a viewer's
// transcript stream, and an auditor's followed audit export, opened
// before their access ends (token revoked, user revoked, role removed),
// end within seconds of it instead of going on receiving.
func TestRevocationEndsOpenStreams(t *testing.T) {
	ctx := context.Background()
	project := unique("revoked")
	require.NoError(t, api.Access().CreateProject(ctx, project))
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Project: project, Model: script(t, "work.yaml"), Repo: gitRepo(t), Message: "process the notes"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)

	for _, how := range []string{"token", "user", "role"} {
		t.Run(how, func(t *testing.T) {
			viewer := unique("viewer")
			member(t, project, viewer, identity.Viewer)
			auditor := unique("auditor")
			member(t, project, auditor, identity.Auditor)
			tokV, err := api.Access().CreateToken(ctx, wire.NewToken{User: viewer})
			require.NoError(t, err)
			tokA, err := api.Access().CreateToken(ctx, wire.NewToken{User: auditor})
			require.NoError(t, err)
			asViewer, asAuditor := client.New(shared.URL).WithToken(tokV.Secret), client.New(shared.URL).WithToken(tokA.Secret)

			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			var mu sync.Mutex
			seen := 0
			streamEnded := make(chan error, 1)
			go func() {
				streamEnded <- asViewer.Sessions().Stream(sctx, x.ID, 0, func(session.Event) error {
					mu.Lock()
					seen++
					mu.Unlock()
					return nil
				})
			}()
			var export bytes.Buffer
			exportEnded := make(chan error, 1)
			go func() {
				exportEnded <- asAuditor.Audit().Export(sctx, &lockedWriter{w: &export}, "jsonl", time.Time{}, true)
			}()
			waitFor(t, "the stream to deliver the transcript", func() (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				return seen > 0, nil
			})

			switch how {
			case "token":
				require.NoError(t, api.Access().RevokeToken(ctx, tokV.ID))
				require.NoError(t, api.Access().RevokeToken(ctx, tokA.ID))
			case "user":
				_, err := api.Access().RevokeUser(ctx, viewer)
				require.NoError(t, err)
				_, err = api.Access().RevokeUser(ctx, auditor)
				require.NoError(t, err)
			case "role":
				require.NoError(t, api.Access().RemoveMember(ctx, project, viewer))
				require.NoError(t, api.Access().RemoveMember(ctx, project, auditor))
			}
			revoked := time.Now()
			// The project goes on: a new message, new events.
			_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"more"}`)})
			require.NoError(t, err)
			for name, ended := range map[string]chan error{"transcript stream": streamEnded, "audit export": exportEnded} {
				select {
				case err := <-ended:
					require.False(t, errors.Is(err, context.DeadlineExceeded), "%s: %v", name, err)
				case <-sctx.Done():
					t.Fatalf("the %s still runs %s after the revocation", name, time.Since(revoked).Round(time.Second))
				}
				require.Less(t, time.Since(revoked), 30*time.Second, name)
			}
		})
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
