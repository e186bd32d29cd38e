package sqlstore_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/store/redacted"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/telemetry"
	"github.com/paddock-dev/paddock/internal/tool"
	"github.com/paddock-dev/paddock/internal/vault"
)

// BenchmarkAppendEvent is the latency of recording one transcript event
// on the session path, its audit entry and Merkle leaf with it, in one
// transaction on a real SQLite file: p50 and p90 per append. "redacted" is
// the path every process takes (secrets looked for first); "retained"
// also seals the event's content (a project that keeps audit content);
// "postgres" is "redacted" on a local PostgreSQL (pgtest's, without fsync);
// "counted" is "redacted" with the node's metrics counting every event
// committed (what every process does since #33).
func BenchmarkAppendEvent(b *testing.B) {
	for _, v := range []struct {
		name              string
		redact, retention bool
		postgres          bool
		counted           bool
	}{{"store", false, false, false, false}, {"redacted", true, false, false, false}, {"counted", true, false, false, true},
		{"retained", true, true, false, false}, {"postgres", true, false, true, false}} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			dsn := filepath.Join(b.TempDir(), "paddock.db")
			if v.postgres {
				dsn = pgtest.URL(b)
			}
			db, err := sqlstore.Open(ctx, dsn, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			var s store.Store = db
			if v.redact {
				s = redacted.Store{Store: db}
			}
			if v.counted {
				m := telemetry.New(telemetry.Options{Census: db, Tools: tool.Set{"read_file": {}}})
				db.Appended = m.Event
				s = redacted.Store{Store: telemetry.Store{Store: db, M: m}}
			}
			if v.retention {
				key, err := vault.NewKey(make([]byte, 32))
				if err != nil {
					b.Fatal(err)
				}
				db.Content = key
				if err := s.SetContentRetention(ctx, "default", time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			a := spec.Record{Project: "default", Name: "a", Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"}
			if _, err := s.ApplyAgents(ctx, []spec.Record{a}); err != nil {
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
		})
	}
}
