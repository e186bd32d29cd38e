package seccomp

import (
	"bytes"
	"flag"
	"os"
	"runtime"
	"testing"
)

var update = flag.Bool("update", false, "write the filter the sandbox embeds again from the library's")

// embedded is the filter package sandbox embeds for amd64.
const embedded = "../seccomp_amd64.bpf"

// TestEmbeddedFilter: the filter the sandbox embeds for amd64 is the one
// go-seccomp-bpf assembles from the list here, byte for byte.
func TestEmbeddedFilter(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the library assembles for the architecture it runs on; amd64's filter is checked on amd64")
	}
	want, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || len(want)%8 != 0 {
		t.Fatalf("the library's filter is %d bytes, not whole instructions", len(want))
	}
	if *update {
		if err := os.WriteFile(embedded, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the embedded filter (%d bytes) is not the library's (%d bytes): go test ./internal/sandbox/seccomp -update", len(got), len(want))
	}
}
