package transcript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
	"github.com/paddock-dev/paddock/internal/transcript"
)

// reads records what a cache asked of the store, and may return fewer
// events than asked, as a store bounding its answers does.
type reads struct {
	*sqlstore.Store
	most int

	mu    sync.Mutex
	after []int64
}

func (r *reads) ListEvents(ctx context.Context, id string, after int64, limit int) ([]session.Event, error) {
	r.mu.Lock()
	r.after = append(r.after, after)
	r.mu.Unlock()
	if r.most > 0 {
		limit = min(limit, r.most)
	}
	return r.Store.ListEvents(ctx, id, after, limit)
}

func (r *reads) asked() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.after
	r.after = nil
	return out
}

func newStore(t *testing.T) (*sqlstore.Store, string) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "paddock.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	create(t, st, "s")
	return st, "s"
}

func create(t *testing.T, st *sqlstore.Store, id string) {
	_, _, err := st.CreateSession(context.Background(), store.NewSession{ID: id, Project: "default", Agent: spec.Record{Project: "default", Name: "a", Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "test"}, StartKind: session.KindStart})
	require.NoError(t, err)
}

func appendN(t *testing.T, st *sqlstore.Store, id string, from, n int) {
	for i := from; i < from+n; i++ {
		data, _ := json.Marshal(session.TextData{Text: fmt.Sprintf("event %d", i)})
		_, err := st.AppendEvent(context.Background(), session.Event{SessionID: id, Kind: session.EventNotice, Key: fmt.Sprintf("e/%d", i), Data: data})
		require.NoError(t, err)
	}
}

// made is how many events a session has when created.
const made = 2

// whole checks events are the session's made and n more, in order, none
// missing.
func whole(t *testing.T, events []session.Event, n int) {
	t.Helper()
	require.Equal(t, made+n, len(events))
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq)
	}
}

func TestReadsOnlyWhatIsNew(t *testing.T) {
	ctx := context.Background()
	st, id := newStore(t)
	src := &reads{Store: st}
	var c transcript.Cache
	appendN(t, st, id, 0, 5)
	got, err := c.Events(ctx, src, id)
	require.NoError(t, err)
	whole(t, got, 5)
	require.Equal(t, []int64{0, 7}, src.asked(), "read from the start, then once more to see the end")

	got[0].Data = json.RawMessage(`"changed by the caller"`)
	appendN(t, st, id, 5, 3)
	again, err := c.Events(ctx, src, id)
	require.NoError(t, err)
	whole(t, again, 8)
	require.Equal(t, []int64{7, 10}, src.asked(), "only what follows the last event read")
	require.NotContains(t, string(again[0].Data), "changed", "a caller's slice is its own")

	none, err := c.Events(ctx, src, "other")
	require.NoError(t, err)
	require.Empty(t, none)
}

// TestPastOneAnswer: a transcript longer than the store gives in one
// answer (10,000 events for SQL stores) is read whole, the newest
// included: a model step once saw only the first 10,000 events.
func TestPastOneAnswer(t *testing.T) {
	ctx := context.Background()
	st, id := newStore(t)
	appendN(t, st, id, 0, 10)
	src := &reads{Store: st, most: 3}
	var c transcript.Cache
	got, err := c.Events(ctx, src, id)
	require.NoError(t, err)
	whole(t, got, 10)
	require.Equal(t, []int64{0, 3, 6, 9, 12}, src.asked())

	if testing.Short() {
		return
	}
	appendN(t, st, id, 10, 10000)
	got, err = (&transcript.Cache{}).Events(ctx, st, id)
	require.NoError(t, err)
	whole(t, got, 10010)
	require.Contains(t, string(got[len(got)-1].Data), "event 10009")
}

// TestBoundedInBytes: transcripts past the bound are let go, the least
// recently read first, and read again whole when asked for; one longer
// than the bound is never held.
func TestBoundedInBytes(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	for _, id := range []string{"a", "b"} {
		create(t, st, id)
		appendN(t, st, id, 0, 20)
	}
	src := &reads{Store: st}
	c := transcript.Cache{MaxBytes: 22 * 250}
	for _, id := range []string{"a", "b", "a"} {
		got, err := c.Events(ctx, src, id)
		require.NoError(t, err)
		whole(t, got, 20)
	}
	require.Equal(t, []int64{0, 22, 0, 22, 0, 22}, src.asked(), "b let a go: a is read whole again")
	_, err := c.Events(ctx, src, "a")
	require.NoError(t, err)
	require.Equal(t, []int64{22}, src.asked(), "a is held now")

	small := transcript.Cache{MaxBytes: 100}
	for range 2 {
		got, err := small.Events(ctx, src, "a")
		require.NoError(t, err)
		whole(t, got, 20)
	}
	require.Equal(t, []int64{0, 22, 0, 22}, src.asked(), "too long to hold: read whole each time")
}

// TestReadWhileAppended: readers racing the writer each see a whole
// prefix of the transcript, and the last read sees all of it.
func TestReadWhileAppended(t *testing.T) {
	ctx := context.Background()
	st, id := newStore(t)
	var c transcript.Cache
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := c.Events(ctx, st, id)
				if err != nil {
					t.Error(err)
					return
				}
				for i, e := range got {
					if e.Seq != int64(i+1) {
						t.Errorf("event %d has sequence %d", i, e.Seq)
						return
					}
				}
			}
		})
	}
	appendN(t, st, id, 0, 200)
	close(done)
	wg.Wait()
	got, err := c.Events(ctx, st, id)
	require.NoError(t, err)
	whole(t, got, 200)
}
