package sandbox

import (
	_ "embed"
	"errors"
)

// filterAMD64 is seccomp.Program's filter for amd64, assembled once
// (seccomp's TestEmbeddedFilter keeps it equal to the library's, and
// `go test ./internal/sandbox/seccomp -update` writes it again): a
// process starting a command does not initialise go-seccomp-bpf's tables
// of every architecture (0.25-0.7 ms of each process's start).
//
//go:embed seccomp_amd64.bpf
var filterAMD64 []byte

func seccompProgram() ([]byte, error) {
	// Whole instructions, the first loading the architecture (a build
	// from a tree whose file was emptied or cut is refused, never run
	// without the filter: bubblewrap would reject it anyway).
	if len(filterAMD64) < 16 || len(filterAMD64)%8 != 0 || filterAMD64[0] != 0x20 {
		return nil, errors.New("the embedded seccomp filter is damaged: go test ./internal/sandbox/seccomp -update")
	}
	return filterAMD64, nil
}
