package layer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestAttackCaptureSparseAmplification: a setup script can leave a sparse
// file (no blocks used in the working copy); Capture copies it as data.
func TestAttackCaptureSparseAmplification(t *testing.T) {
	l := &Layers{Dir: t.TempDir(), MaxBytes: 1 << 30}
	b, err := l.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	src := t.TempDir()
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 20
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var st syscall.Stat_t
	_ = syscall.Stat(filepath.Join(src, "sparse"), &st)
	t.Logf("working copy: %d bytes apparent, %d bytes allocated", st.Size, st.Blocks*512)
	if _, err := b.Capture(src, []string{"sparse"}); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Stat(filepath.Join(b.dir, "copy", "sparse"), &st)
	t.Logf("layer: %d bytes apparent, %d bytes allocated", st.Size, st.Blocks*512)
	if st.Blocks*512 > size/2 {
		t.Errorf("a sparse file of the working copy takes %d bytes of the host's disk in the layer", st.Blocks*512)
	}
}
