package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestReasoningEffortReachesTheModel: a session's first message asks for
// high reasoning and the model is called with it; the next turn, which
// names none, gets the agent's default; the reasoning tokens are
// counted in the usage with the effort of the turn. A model without the
// setting refuses an effort when the agent is applied, when a session
// is started and when a message is sent.
func TestReasoningEffortReachesTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	reasoned := strings.Replace(providertest.OpenAIStream("Thought it through."), `"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`,
		`"usage":{"prompt_tokens":10,"completion_tokens":50,"total_tokens":60,"completion_tokens_details":{"reasoning_tokens":45}}`, 1)
	srv := openAIServer(t, providertest.Reply{SSE: reasoned}, providertest.Reply{SSE: providertest.OpenAIStream("Again.")},
		providertest.Reply{SSE: providertest.OpenAIStream("On another model.")})

	_, err := api.Projects().Apply(ctx, []byte("name: plain-thinker\nmodel: openai/gpt-4.1\nreasoningEffort: high\n"))
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "gpt-4.1 has no reasoning setting: %v", err)
	require.ErrorContains(t, err, "no reasoning setting")
	_, err = api.Projects().Apply(ctx, []byte("name: thinker\nmodel: openai/gpt-5\nreasoningEffort: medium\ntools: [run_command]\n"))
	require.NoError(t, err)

	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: "thinker", Repo: gitRepo(t), Message: "think hard", ReasoningEffort: "high"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)
	payload, _ := json.Marshal(session.MessagePayload{Message: "again", ReasoningEffort: "extreme"})
	_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "an unknown level: %v", err)
	require.ErrorContains(t, err, "takes minimal, low, medium, high")
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "again"})
	waitFor(t, "the second turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status == session.TurnCompleted, err
	})
	require.Equal(t, "high", srv.Requests[0]["reasoning_effort"], "the message's effort")
	require.Equal(t, "medium", srv.Requests[1]["reasoning_effort"], "the agent's, when the message names none")
	u, err := api.Sessions().Usage(ctx, x.ID)
	require.NoError(t, err)
	turns, err := api.Sessions().Turns(ctx, x.ID)
	require.NoError(t, err)
	require.Equal(t, 45, u.Turns[turns[0].ID].ThinkingTokens)
	require.Equal(t, "high", u.Turns[turns[0].ID].ReasoningEffort)
	require.Equal(t, "medium", u.Turns[turns[1].ID].ReasoningEffort)
	require.Equal(t, 45, u.Usage.ThinkingTokens)

	// A message may name its turn's model too: the turn runs on it.
	payload, _ = json.Marshal(session.MessagePayload{Message: "now on o3", Model: "openai/gpt-4.1", ReasoningEffort: "low"})
	_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "the message's model decides which levels it takes: %v", err)
	payload, _ = json.Marshal(session.MessagePayload{Message: "now on o3", Model: "nowhere/model"})
	_, err = api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "a model that cannot be called: %v", err)
	send(t, x.ID, session.KindMessage, session.MessagePayload{Message: "now on o3", Model: "openai/o3", ReasoningEffort: "low"})
	waitFor(t, "the third turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 3 && turns[2].Status == session.TurnCompleted, err
	})
	require.Equal(t, "o3", srv.Requests[2]["model"])
	require.Equal(t, "low", srv.Requests[2]["reasoning_effort"])
	require.Equal(t, "gpt-5", srv.Requests[1]["model"], "the agent's model otherwise")

	_, err = api.Sessions().Create(ctx, wire.CreateRequest{Model: "openai/gpt-4.1", Repo: gitRepo(t), Message: "think", ReasoningEffort: "low"})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "refused at the start: %v", err)
	y, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "openai/gpt-4.1", Repo: gitRepo(t)})
	require.NoError(t, err)
	payload, _ = json.Marshal(session.MessagePayload{Message: "think", ReasoningEffort: "low"})
	_, err = api.Sessions().Send(ctx, y.ID, wire.SendRequest{Kind: session.KindMessage, Payload: payload})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "refused when sent: %v", err)
	require.ErrorContains(t, err, "model openai/gpt-4.1 has no reasoning setting")
	send(t, y.ID, session.KindStop, session.StopPayload{})
}
