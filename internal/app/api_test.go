package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

func apiStatus(t *testing.T, err error) int {
	t.Helper()
	var e *client.Error
	require.ErrorAs(t, err, &e)
	return e.Status
}

// TestAnswersAreChecked: an answer must name an open question, pick one of
// its options where it offers only options, and answer it once.
func TestAnswersAreChecked(t *testing.T) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "work.yaml"), Message: "go"})
	require.NoError(t, err)
	q := waitQuestion(t, x.ID)
	answer := func(key string, p session.AnswerPayload) error {
		data, _ := json.Marshal(p)
		_, err := api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindAnswer, Payload: data, IdempotencyKey: key})
		return err
	}
	err = answer("", session.AnswerPayload{ToolCallID: "call_nope", Answers: map[string]string{"go": "yes"}})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err))
	require.ErrorContains(t, err, "no question with toolCallId")
	err = answer("", session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"go": "maybe"}})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err))
	require.ErrorContains(t, err, "want one of yes, no")
	err = answer("", session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"went": "yes"}})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err))

	require.NoError(t, answer("a1", session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"go": "yes"}}))
	require.NoError(t, answer("a1", session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"go": "yes"}}), "a retry is the same answer")
	err = answer("a2", session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{"go": "no"}})
	require.Equal(t, http.StatusConflict, apiStatus(t, err), "a second answer")
	waitFor(t, "the answered turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status == session.TurnCompleted, err
	})
	err = answer("a3", session.AnswerPayload{ToolCallID: q.ToolCallID, Response: "again"})
	require.Equal(t, http.StatusConflict, apiStatus(t, err), "answered and closed")
}

// TestIdempotencyKeyReuse: the same request under a key gets the original
// answer; a different one is a 409 naming the original.
func TestIdempotencyKeyReuse(t *testing.T) {
	ctx := context.Background()
	key := unique("create")
	create := wire.CreateRequest{Model: script(t, "empty.yaml"), Message: "hello", IdempotencyKey: key}
	x, err := api.Sessions().Create(ctx, create)
	require.NoError(t, err)
	again, err := api.Sessions().Create(ctx, create)
	require.NoError(t, err)
	require.Equal(t, x.ID, again.ID)
	other := create
	other.Message = "something else"
	_, err = api.Sessions().Create(ctx, other)
	require.Equal(t, http.StatusConflict, apiStatus(t, err))
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, x.ID, e.Body.SessionID)
	require.Contains(t, e.Error(), "session "+x.ID)

	msg := func(kind session.CommandKind, payload string) (session.Command, error) {
		return api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: kind, Payload: json.RawMessage(payload), IdempotencyKey: "k1"})
	}
	c, err := msg(session.KindMessage, `{"message":"one"}`)
	require.NoError(t, err)
	c2, err := msg(session.KindMessage, `{ "message" : "one" }`)
	require.NoError(t, err, "formatting is not a difference")
	require.Equal(t, c.ID, c2.ID)
	_, err = msg(session.KindMessage, `{"message":"two"}`)
	require.Equal(t, http.StatusConflict, apiStatus(t, err))
	require.ErrorContains(t, err, "command "+c.ID)
	_, err = msg(session.KindInterrupt, `{}`)
	require.Equal(t, http.StatusConflict, apiStatus(t, err))
	require.ErrorContains(t, err, "kind (message)")
}

// TestStoppedStreamEndsAtOnce: SSE resumed at a stopped session's last
// event sends end at once; archiving is refused while a turn runs.
func TestStoppedStreamEndsAtOnce(t *testing.T) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(t, "slow.yaml"), Message: "go slowly"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusRunning)
	_, err = api.Sessions().Archive(ctx, x.ID)
	require.Equal(t, http.StatusConflict, apiStatus(t, err), "a running session is not hidden")
	send(t, x.ID, session.KindStop, session.StopPayload{Reason: "enough"})
	waitStatus(t, x.ID, session.StatusStopped)
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	last := events[len(events)-1].Seq

	for _, after := range []int64{last, last + 5} {
		req, _ := http.NewRequest("GET", shared.URL+"/v1/sessions/"+x.ID+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
		hc := &http.Client{Timeout: 20 * time.Second}
		start := time.Now()
		resp, err := hc.Do(req)
		require.NoError(t, err)
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		resp.Body.Close()
		require.NoError(t, sc.Err(), "the stream ends by itself")
		require.Contains(t, strings.Join(lines, "\n"), "event: end")
		require.Less(t, time.Since(start), 5*time.Second)
	}
	_, err = api.Sessions().Archive(ctx, x.ID)
	require.NoError(t, err, "a stopped session may be archived")
}

// TestReplayNamesStayInTheirFolder: a model name cannot read server files.
func TestReplayNamesStayInTheirFolder(t *testing.T) {
	ctx := context.Background()
	for _, m := range []string{"replay/../../../../etc/passwd", "replay//etc/passwd", "replay/../paddock.db"} {
		_, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: m})
		require.Equal(t, http.StatusBadRequest, apiStatus(t, err), m)
		require.NotContains(t, err.Error(), "root:", m)
	}
}
