package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store/pgtest"
	"github.com/paddock-dev/paddock/internal/volume"
	"github.com/paddock-dev/paddock/internal/wire"
)

// BenchmarkClusterLoad runs 500 live sessions on PostgreSQL served by one
// node, then by two (`paddock serve` processes on one machine), and sends
// each session two messages, one round after the other, through the nodes'
// APIs in turn, 16 at a time. It reports the throughput (commands whose
// turn completed per second, from the first send to the last turn) and the
// p50 and p99 of command → turn (from the command's row to its turn's row,
// both written by the server). Run it alone:
//
//	go test ./internal/app -run '^$' -bench ClusterLoad -benchtime 1x
func BenchmarkClusterLoad(b *testing.B) {
	for _, nodes := range []int{1, 2} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for b.Loop() {
				clusterLoad(b, nodes)
			}
		})
	}
}

func clusterLoad(b *testing.B, nodes int) {
	const sessions, rounds, parallel = 500, 2, 16
	ctx := context.Background()
	url := pgtest.URL(b)
	env := []string{"PADDOCK_DATABASE_URL=" + url, "PADDOCK_ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	var cs []*client.Client
	first := ""
	for i := range nodes {
		d := dataDir(b)
		b.Cleanup(func() { _ = (&volume.Volumes{Dir: filepath.Join(d, "volumes")}).UnmountAll(context.Background()) })
		scriptIn(b, d, "empty.yaml")
		e := env
		if i == 0 {
			first = d
		} else {
			e = append(env, "PADDOCK_TOKEN="+readToken(first)) // the administrator the first node made
		}
		_, c := serveChild(b, d, e...)
		cs = append(cs, c)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	completed := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE status = 'completed'`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	waitTurns := func(want int) {
		waitFor(b, fmt.Sprintf("%d completed turns", want), func() (bool, error) { return completed() >= want, nil })
	}
	ids := make([]string, sessions)
	spread(b, sessions, parallel, func(i int) error {
		x, err := cs[i%nodes].Sessions().Create(ctx, wire.CreateRequest{Model: "replay/empty.yaml", Message: "hello", Project: "load"})
		ids[i] = x.ID
		return err
	})
	waitTurns(sessions)
	start := time.Now()
	for r := range rounds {
		spread(b, sessions, parallel, func(i int) error {
			_, err := cs[(i+r)%nodes].Sessions().Send(ctx, ids[i], wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"ping"}`)})
			return err
		})
		waitTurns(sessions * (r + 2))
	}
	took := time.Since(start)
	var lat []time.Duration
	var mu sync.Mutex
	spread(b, sessions, parallel, func(i int) error {
		c := cs[i%nodes]
		cmds, err := c.Sessions().Commands(ctx, ids[i])
		if err != nil {
			return err
		}
		turns, err := c.Sessions().Turns(ctx, ids[i])
		if err != nil {
			return err
		}
		at := map[string]time.Time{}
		for _, t := range turns {
			for _, id := range t.CommandIDs {
				at[id] = t.CreatedAt
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, cmd := range cmds {
			if cmd.Kind == session.KindMessage {
				if t, ok := at[cmd.ID]; ok {
					lat = append(lat, t.Sub(cmd.CreatedAt))
				}
			}
		}
		return nil
	})
	if len(lat) != sessions*rounds {
		b.Fatalf("%d of %d messages have a turn", len(lat), sessions*rounds)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(sessions*rounds)/took.Seconds(), "cmds/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	fmt.Fprintf(os.Stderr, "cluster load: %d node(s), %d sessions, %d messages in %s\n", nodes, sessions, sessions*rounds, took.Round(time.Millisecond))
}

// spread runs do(0..n-1), parallel at a time, failing b on an error.
func spread(b *testing.B, n, parallel int, do func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range parallel {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
