package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

func TestAgentArchivesItself(t *testing.T) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "archiver.yaml"), Message: "wrap up"})
	require.NoError(t, err)
	waitFor(t, "the session to archive itself", func() (bool, error) {
		s, err := api.Sessions().Get(ctx, x.ID)
		return s.ArchivedAt != nil && s.Status == session.StatusAwaiting, err
	})
	s, err := api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, "notes for whoever comes next", s.Handoff)
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	found := false
	for _, e := range events {
		found = found || (e.Kind == session.EventNotice && strings.Contains(string(e.Data), "archived by agent:"+x.ID))
	}
	require.True(t, found, "the archive is attributed to the agent")
	// A message revives it.
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "one more thing"})
	s, err = api.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	require.Nil(t, s.ArchivedAt)
}

func TestStopWithRespawnHandsOff(t *testing.T) {
	ctx := context.Background()
	keeper := unique("keeper")
	applyAgent(t, keeper, script(t, "work.yaml"), "concurrency: 1\nreplace: auto\nonReplace: pick up where the last one stopped\n")
	first, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: keeper})
	require.NoError(t, err)
	waitStatus(t, first.ID, session.StatusAwaiting)
	send(t, first.ID, session.KindStop, session.StopPayload{Reason: "rotate", Respawn: true, Handoff: "the build is flaky on Tuesdays"})
	waitStatus(t, first.ID, session.StatusStopped)
	var next session.Session
	waitFor(t, "the successor", func() (bool, error) {
		list, err := api.Sessions().List(ctx, session.Filter{Agent: keeper, Status: session.StatusAwaiting})
		if len(list) == 1 {
			next = list[0]
		}
		return len(list) == 1, err
	})
	require.NotEqual(t, first.ID, next.ID)
	require.Equal(t, "pick up where the last one stopped", next.Input)
	cmds, err := api.Sessions().Commands(ctx, next.ID)
	require.NoError(t, err)
	var p session.MessagePayload
	require.NoError(t, json.Unmarshal(cmds[0].Payload, &p))
	require.Equal(t, "the build is flaky on Tuesdays", p.Handoff)
	events, err := api.Sessions().Events(ctx, next.ID, 0)
	require.NoError(t, err)
	var firstMessage string
	for _, e := range events {
		if e.Kind == session.EventUserMessage {
			var d session.TextData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			firstMessage = d.Text
			break
		}
	}
	require.Contains(t, firstMessage, "the build is flaky on Tuesdays")
	// The successor holds the singleton slot now.
	_, err = api.Sessions().Create(ctx, wire.CreateRequest{Agent: keeper})
	require.ErrorContains(t, err, next.ID)
	send(t, next.ID, session.KindStop, session.StopPayload{})
	waitStatus(t, next.ID, session.StatusStopped)
}

// TestFallbackModel: when the agent's model fails (here a 400 from an
// OpenAI-compatible server), the step falls back to the next model.
func TestFallbackModel(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"model not loaded","type":"invalid_request_error"}}`))
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	applyAgent(t, "fallback", "openai/broken", "fallbackModels: ["+script(t, "empty.yaml")+"]\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: "fallback", Message: "hello"})
	require.NoError(t, err)
	waitFor(t, "the turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	turns, _ := api.Sessions().Turns(ctx, x.ID)
	require.Equal(t, session.TurnCompleted, turns[0].Status, turns[0].Error)
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	found := false
	for _, e := range events {
		found = found || strings.Contains(string(e.Data), "falling back to replay/")
	}
	require.True(t, found)
}
