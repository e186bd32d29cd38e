// Package liveoutput records a running command's output while it runs,
// so a person watching sees it as it happens: whole lines (a very long
// line in pieces), every quarter second, bounded, with the session's
// credentials masked as they are in the result, never a value cut in
// two.
package liveoutput

import (
	"bytes"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
)

// liveEvery is how often a running command's new output is recorded.
const liveEvery = 250 * time.Millisecond

// liveLine is the longest partial line held back waiting for its end.
const liveLine = 4 << 10

// Live records a running command's output as output events while
// it runs, so a person watching sees it as it happens: whole lines (a
// very long line in pieces), every liveEvery, at most
// session.MaxLiveOutput per call, with the session's credentials masked
// as they are in the result.
type Live struct {
	mu      sync.Mutex
	buf     []byte
	sent    int
	seq     int
	full    bool // the bound is reached
	saidCut bool
	mask    func(string) string
	values  []string // the masked values: a piece never ends inside one
	record  func(seq int, d session.OutputData)
	callID  string
	stopped chan struct{}
	ended   sync.WaitGroup
}

// New begins recording call callID's output through record (seq counts
// the pieces); creds are masked.
func New(callID string, creds map[string]string, record func(seq int, d session.OutputData)) *Live {
	l := &Live{callID: callID, record: record, stopped: make(chan struct{}), mask: secret.NewValues(creds).Mask}
	for _, v := range creds {
		l.values = append(l.values, v)
	}
	l.ended.Add(1)
	go func() {
		defer l.ended.Done()
		t := time.NewTicker(liveEvery)
		defer t.Stop()
		for {
			select {
			case <-l.stopped:
				l.flush(true)
				return
			case <-t.C:
				l.flush(false)
			}
		}
	}()
	return l
}

// Write takes the command's output; what is past the bound is dropped
// here (the result keeps it).
func (l *Live) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := session.MaxLiveOutput - l.sent - len(l.buf); room > 0 {
		l.buf = append(l.buf, p[:min(len(p), room)]...)
	}
	if l.sent+len(l.buf) >= session.MaxLiveOutput {
		l.full = true
	}
	return len(p), nil
}

// flush records what is ready: whole lines, or everything when final.
func (l *Live) flush(final bool) {
	l.mu.Lock()
	n := len(l.buf)
	if !final {
		if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
			n = i + 1
		} else if len(l.buf) > liveLine {
			n = len(l.buf)
			i := max(n-utf8.UTFMax, 0)
			for j := n - 1; j >= i; j-- {
				if utf8.RuneStart(l.buf[j]) {
					if !utf8.FullRune(l.buf[j:n]) {
						n = j // a character not yet whole waits
					}
					break
				}
			}
		} else {
			n = 0
		}
		n = l.safeCut(l.buf, n)
	}
	text := string(l.buf[:n])
	if final && l.full {
		// The bound may have cut a value in two: what is left of it is
		// dropped, not shown (the result keeps the whole, masked).
		text = text[:l.safeCut(l.buf, n)]
	}
	l.buf = l.buf[n:]
	l.sent += n
	cut := l.full && !l.saidCut && len(l.buf) == 0
	l.saidCut = l.saidCut || cut
	seq := l.seq
	if text != "" || cut {
		l.seq++
	}
	l.mu.Unlock()
	if text != "" || cut {
		l.record(seq, session.OutputData{CallID: l.callID, Text: l.mask(text), Cut: cut})
	}
}

// close records the rest and ends the recording.
// Close records what is left and stops the recording.
func (l *Live) Close() {
	close(l.stopped)
	l.ended.Wait()
}

// safeCut moves a cut at n of b back so that no masked value is split by
// it: the start of a value at the end of b, which may go on, waits; and a
// cut inside a whole occurrence moves before it (so a value whose end
// starts itself or another value is masked whole, with what follows).
func (l *Live) safeCut(b []byte, n int) int {
	for _, v := range l.values {
		for k := min(len(v)-1, len(b)); k > 0; k-- {
			if bytes.HasSuffix(b, []byte(v[:k])) {
				n = min(n, len(b)-k)
				break
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for _, v := range l.values {
			if v == "" {
				continue
			}
			for from := 0; from < n; {
				i := bytes.Index(b[from:], []byte(v))
				if i < 0 {
					break
				}
				if start := from + i; start < n && n < start+len(v) {
					n, moved = start, true
					break
				}
				from += i + 1
			}
		}
	}
	return n
}
