package sandbox

import "os"

// seccompFile is a fresh read descriptor of the filter for one bwrap.
func (b *Bwrap) seccompFile() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(b.seccomp); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
