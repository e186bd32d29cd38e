package app_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/session"
)

// BenchmarkCommandToTurn measures, on the embedded server, the time from a
// message command being sent through the API until its turn has started
// (the turn row exists and the session is running). It reports the median
// and p90 of the iterations.
func BenchmarkCommandToTurn(b *testing.B) {
	ctx := context.Background()
	x, err := api.CreateSession(ctx, engine.CreateRequest{Model: script(b, "empty.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	st := shared.Service.Store
	waitTurn := func(ch <-chan struct{}, after int64, status session.TurnStatus) int64 {
		for {
			events, err := st.ListEvents(ctx, x.ID, after, 0)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range events {
				after = e.Seq
				if e.Kind == session.EventTurn {
					var d session.TurnData
					_ = json.Unmarshal(e.Data, &d)
					if d.Status == status {
						return after
					}
				}
			}
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				b.Fatal("no turn within 30s")
			}
		}
	}
	waitFor(b, "the session to await", func() (bool, error) {
		s, err := api.Session(ctx, x.ID)
		return s.Status == session.StatusAwaiting, err
	})
	ch, cancel := st.Subscribe(x.ID)
	defer cancel()
	events, _ := st.ListEvents(ctx, x.ID, 0, 0)
	after := events[len(events)-1].Seq
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := api.Send(ctx, x.ID, engine.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"ping"}`)}); err != nil {
			b.Fatal(err)
		}
		after = waitTurn(ch, after, session.TurnAccepted)
		lat = append(lat, time.Since(start))

		b.StopTimer()
		after = waitTurn(ch, after, session.TurnCompleted)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
}
