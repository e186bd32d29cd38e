package egress

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener accepts a connection only when one of the proxy's slots
// is free, or one of its few spare slots: a connection in a spare slot is
// answered 503 (too many connections) and closed. With all of them taken
// it stops accepting, so a command cannot exhaust the host's descriptors.
type limitListener struct {
	net.Listener
	slots, spare chan struct{}
	done         chan struct{}
	once         sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	over := false
	select {
	case l.slots <- struct{}{}:
	default:
		select {
		case l.slots <- struct{}{}:
		case l.spare <- struct{}{}:
			over = true
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	sem := l.slots
	if over {
		sem = l.spare
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-sem
		return nil, err
	}
	return &limitedConn{Conn: c, over: over, release: func() { <-sem }}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn holds its slot until closed.
type limitedConn struct {
	net.Conn
	over    bool
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// countedConn counts the bytes written to (up) and read from (down) an
// upstream connection, and tells the idle watch of every transfer.
type countedConn struct {
	net.Conn
	up, down atomic.Int64
	w        *watcher
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.down.Add(int64(n))
		c.w.touch()
	}
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.up.Add(int64(n))
		c.w.touch()
	}
	return n, err
}

func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// watcher calls onIdle once when no transfer has touched it for d.
type watcher struct {
	d      time.Duration
	start  time.Time
	last   atomic.Int64 // since start
	fired  atomic.Bool
	onIdle func()

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func watch(d time.Duration, onIdle func()) *watcher {
	w := &watcher{d: d, start: time.Now(), onIdle: onIdle}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = time.AfterFunc(d, w.check)
	return w
}

func (w *watcher) touch() {
	if w != nil {
		w.last.Store(int64(time.Since(w.start)))
	}
}

func (w *watcher) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	idle := time.Since(w.start) - time.Duration(w.last.Load())
	if idle < w.d {
		w.t.Reset(w.d - idle)
		return
	}
	w.stopped = true
	w.fired.Store(true)
	w.onIdle()
}

func (w *watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}

var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func getBuf() *[]byte  { return bufs.Get().(*[]byte) }
func putBuf(b *[]byte) { bufs.Put(b) }
