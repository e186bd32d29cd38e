package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/auditlog"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/web"
)

// BenchmarkSessionsPage is the server side of the sessions list's first
// render with 500 sessions on a real SQLite file (each row with its park
// and cost): p50 and p90 per page.
func BenchmarkSessionsPage(b *testing.B) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(b.TempDir(), "paddock.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc := &engine.Service{Store: st, Access: &access.Service{Store: st}}
	svc.Audit = &auditlog.Service{Store: st, Access: svc.Access, Sealer: svc.Sealer}
	dir := b.TempDir()
	if _, err := svc.Access.Bootstrap(ctx, dir, "bench"); err != nil {
		b.Fatal(err)
	}
	token, _ := os.ReadFile(filepath.Join(dir, datadir.AdminToken))
	agent := spec.Record{Project: "default", Name: "a", Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"}
	for i := range 500 {
		if _, _, err := st.CreateSession(ctx, store.NewSession{ID: fmt.Sprintf("s%03d", i), Project: "default", Agent: agent, DisplayTitle: fmt.Sprintf("fix issue %d", i),
			CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "bench"}, StartKind: session.KindStart}); err != nil {
			b.Fatal(err)
		}
	}
	app, err := web.New(svc, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		b.Fatal(err)
	}
	h := app.Handler()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(&http.Cookie{Name: api.TokenCookie, Value: strings.TrimSpace(string(token))})
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		lat = append(lat, time.Since(start))
		if w.Code != http.StatusOK || strings.Count(w.Body.String(), "<tr data-id=") != 500 {
			b.Fatalf("status %d, rows %d", w.Code, strings.Count(w.Body.String(), "<tr data-id="))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
}
