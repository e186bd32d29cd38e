package egress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Endpoint is a Proxy served on a Unix socket of its own, for the
// sandboxes of one command (or one setup run) to reach through their
// forwarder.
type Endpoint struct {
	// Socket is the socket's host path, to bind into the sandbox.
	Socket string
	cancel context.CancelFunc
	done   chan error
}

// maxSocketPath is the longest path a Unix socket may have on Linux.
const maxSocketPath = 107

// Open serves a proxy configured by cfg on a fresh socket in dir, a
// directory only its owner may list; the socket belongs to uid (the
// sandbox user) when uid is not 0, so only that user and root connect.
func Open(dir string, uid int, cfg Config) (*Endpoint, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	path := filepath.Join(dir, hex.EncodeToString(b[:])+".sock")
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("egress proxy socket %s: longer than a Unix socket's %d bytes (a shorter data directory makes it shorter)", path, maxSocketPath)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress proxy socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err == nil && uid != 0 {
		err = os.Chown(path, uid, uid)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Endpoint{Socket: path, cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- p.Serve(ctx, ln) }()
	return e, nil
}

// Close stops serving, ends every connection, and returns once each has
// been recorded and the socket is gone.
func (e *Endpoint) Close() error {
	e.cancel()
	return <-e.done
}
