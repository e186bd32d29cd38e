// Package transcript keeps the sessions' transcripts this node has read,
// so that a model step reads only what was appended since the last one
// rather than the whole conversation again: a session's events are only
// ever appended, each with the next sequence number of its session, and a
// store commits a session's events in that order (one with sequence n is
// visible only once n-1 is), so what was read stays true and the rest
// follows it. The transcripts held are bounded in bytes, the least
// recently read let go first.
package transcript

import (
	"container/list"
	"context"
	"slices"
	"sync"

	"github.com/paddock-dev/paddock/internal/session"
)

// Source reads a session's events after a sequence number, in order, up
// to limit (a store may return fewer: the next read goes on from there).
type Source interface {
	ListEvents(ctx context.Context, sessionID string, after int64, limit int) ([]session.Event, error)
}

// DefaultMaxBytes bounds the transcripts a Cache holds when MaxBytes is 0.
const DefaultMaxBytes = 64 << 20

// page is how many events one read asks for.
const page = 10000

// Cache holds the transcripts read, up to MaxBytes in all. The zero value
// is ready to use.
type Cache struct {
	MaxBytes int64

	mu    sync.Mutex
	held  map[string]*list.Element // of *kept, most recently read first in lru
	lru   list.List
	bytes int64
}

type kept struct {
	id     string
	events []session.Event
	bytes  int64
}

// Events is the whole of session id's transcript as src has it now: what
// was read before, and every event appended since, read after it. The
// slice is the caller's own; the events' Data are shared, never to be
// written.
func (c *Cache) Events(ctx context.Context, src Source, id string) ([]session.Event, error) {
	have := c.read(id)
	var after int64
	if len(have) > 0 {
		after = have[len(have)-1].Seq
	}
	var more []session.Event
	for {
		got, err := src.ListEvents(ctx, id, after, page)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			break
		}
		more = append(more, got...)
		after = got[len(got)-1].Seq
	}
	if len(more) == 0 {
		return have, nil
	}
	all := append(have, more...)
	c.keep(id, all)
	return all, nil
}

// read is a copy of what is held of session id.
func (c *Cache) read(id string) []session.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.held[id]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	k := el.Value.(*kept)
	return append(make([]session.Event, 0, len(k.events)+16), k.events...)
}

// keep holds events as session id's transcript, unless another read has
// already held a longer one, and lets the least recently read go until
// the rest fit.
func (c *Cache) keep(id string, events []session.Event) {
	size := sizeOf(events)
	c.mu.Lock()
	defer c.mu.Unlock()
	max := c.MaxBytes
	if max == 0 {
		max = DefaultMaxBytes
	}
	if el, ok := c.held[id]; ok {
		k := el.Value.(*kept)
		if len(k.events) >= len(events) {
			return
		}
		c.drop(el)
	}
	if size > max {
		return // too long to hold: read whole each time
	}
	if c.held == nil {
		c.held = map[string]*list.Element{}
	}
	c.held[id] = c.lru.PushFront(&kept{id: id, events: slices.Clone(events), bytes: size})
	c.bytes += size
	for c.bytes > max {
		c.drop(c.lru.Back())
	}
}

func (c *Cache) drop(el *list.Element) {
	k := c.lru.Remove(el).(*kept)
	delete(c.held, k.id)
	c.bytes -= k.bytes
}

// sizeOf is about the memory events hold.
func sizeOf(events []session.Event) int64 {
	const overhead = 160 // the struct, its strings' headers and the time
	n := int64(len(events)) * overhead
	for _, e := range events {
		n += int64(len(e.SessionID) + len(e.TurnID) + len(e.Kind) + len(e.Key) + len(e.Data))
	}
	return n
}
