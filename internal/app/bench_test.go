package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// BenchmarkCommandToTurn measures, on the embedded server, the time from a
// message command being sent through the API until its turn has started
// (the turn row exists and the session is running), and until the model's
// answer is recorded (the replay model answers at once, so this is the
// message → model request path). It reports the median and p90 (p99 for
// the model) of the iterations.
func BenchmarkCommandToTurn(b *testing.B) {
	ctx := context.Background()
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: script(b, "empty.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	st := shared.Service.Store
	waitEvent := func(ch <-chan struct{}, after int64, is func(session.Event) bool) int64 {
		for {
			events, err := st.ListEvents(ctx, x.ID, after, 0)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range events {
				after = e.Seq
				if is(e) {
					return after
				}
			}
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				b.Fatal("no such event within 30s")
			}
		}
	}
	waitTurn := func(ch <-chan struct{}, after int64, status session.TurnStatus) int64 {
		return waitEvent(ch, after, func(e session.Event) bool {
			var d session.TurnData
			return e.Kind == session.EventTurn && json.Unmarshal(e.Data, &d) == nil && d.Status == status
		})
	}
	answered := func(e session.Event) bool { return e.Kind == session.EventAssistantMessage }
	waitFor(b, "the session to await", func() (bool, error) {
		s, err := api.Sessions().Get(ctx, x.ID)
		return s.Status == session.StatusAwaiting, err
	})
	ch, cancel := st.Subscribe(x.ID)
	defer cancel()
	events, _ := st.ListEvents(ctx, x.ID, 0, 0)
	after := events[len(events)-1].Seq
	lat := make([]time.Duration, 0, b.N)
	model := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"ping"}`)}); err != nil {
			b.Fatal(err)
		}
		after = waitTurn(ch, after, session.TurnAccepted)
		lat = append(lat, time.Since(start))
		after = waitEvent(ch, after, answered)
		model = append(model, time.Since(start))

		b.StopTimer()
		after = waitTurn(ch, after, session.TurnCompleted)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(model, func(i, j int) bool { return model[i] < model[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(model[len(model)/2].Microseconds())/1000, "model-p50-ms")
	b.ReportMetric(float64(model[len(model)*99/100].Microseconds())/1000, "model-p99-ms")
}

// BenchmarkMessageToModelRequest measures, on the embedded server, the
// time from a message command being sent through the API until the
// model's HTTP request arrives at its provider (the official OpenAI SDK
// against a real HTTP server speaking its wire), and until the answer is
// recorded. It reports the median and p99 of the iterations.
func BenchmarkMessageToModelRequest(b *testing.B) {
	ctx := context.Background()
	arrived := make(chan time.Time, 1)
	stream := providertest.OpenAIStream("pong")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case arrived <- at:
		default:
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, stream)
	}))
	defer srv.Close()
	b.Setenv("OPENAI_API_KEY", "test-key")
	b.Setenv("OPENAI_BASE_URL", srv.URL)
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Model: "openai/gpt-4o", Repo: gitRepo(b), Message: "ping"})
	if err != nil {
		b.Fatal(err)
	}
	<-arrived
	idle := func() {
		waitFor(b, "the session to await", func() (bool, error) {
			s, err := api.Sessions().Get(ctx, x.ID)
			return s.Status == session.StatusAwaiting, err
		})
	}
	idle()
	req := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"ping"}`)}); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-arrived:
			req = append(req, at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatal("no model request within 30s")
		}
		b.StopTimer()
		idle()
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(req, func(i, j int) bool { return req[i] < req[j] })
	b.ReportMetric(float64(req[len(req)/2].Microseconds())/1000, "request-p50-ms")
	b.ReportMetric(float64(req[len(req)*99/100].Microseconds())/1000, "request-p99-ms")
}
