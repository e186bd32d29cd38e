package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlite"
)

// BenchmarkAppendEvent is the latency of recording one transcript event
// on the session path, its audit entry and Merkle leaf with it, in one
// transaction on a real SQLite file: p50 and p90 per append.
func BenchmarkAppendEvent(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "paddock.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a := store.Agent{Project: "default", Name: "a", Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"}
	if _, err := s.ApplyAgents(ctx, []store.Agent{a}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.CreateSession(ctx, store.NewSession{ID: "s", Project: "default", Agent: a, CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "ana"},
		StartKind: session.KindStart, StartPayload: json.RawMessage(`{}`)}); err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(session.ToolCallData{ID: "c", Name: "read_file", State: session.CallDone, Result: "some file content"})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := s.AppendEvent(ctx, session.Event{SessionID: "s", Kind: session.EventToolCall, Data: data}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
}
