package app

import (
	"io"
	"os"
	"path/filepath"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/layer"
)

// environments gives sessions their environment layers and their egress:
// layers under DATA/layers (unfinished builds of an earlier process
// removed), and proxies' sockets under DATA/egress. Bubblewrap sandboxes
// also need the forwarder (see forwarder); pods reach the proxies through
// the egress gateway.
func environments(acts *durable.Activities, cfg config.Config) error {
	l := &layer.Layers{Dir: filepath.Join(cfg.DataDir, "layers"), MaxBytes: cfg.LayersMax, UID: acts.Copies.UID}
	l.Sweep()
	acts.Copies.Layers = l
	dir := filepath.Join(cfg.DataDir, "egress")
	_ = os.RemoveAll(dir) // sockets of an earlier process
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	acts.Egress = &durable.Egress{Dir: dir, Permit: cfg.EgressPermit}
	return nil
}

// forwarder puts this executable at DIR/paddock-egress-forward, which
// commands allowed the network run inside their bubblewrap sandbox (see
// egress.Reexec), where the sandbox user can reach it: a hard link where
// it can, a copy otherwise.
func forwarder(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o711)
	dst := filepath.Join(dir, egress.ForwarderName)
	if a, err := os.Stat(self); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			return dst, nil // linked by an earlier start of this binary
		}
	}
	tmp := dst + ".new"
	_ = os.Remove(tmp)
	// A link serves when the sandbox user may run it as it is (its mode
	// is the executable's own, which is not Paddock's to change).
	if os.Link(self, tmp) == nil {
		if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm()&0o005 != 0o005 {
			_ = os.Remove(tmp)
		}
	}
	if _, err := os.Stat(tmp); err != nil {
		if err := copyFile(self, tmp); err != nil {
			return "", err
		}
	}
	return dst, os.Rename(tmp, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
