package sandbox

import _ "embed"

// filterAMD64 is seccomp.Program's filter for amd64, assembled once
// (seccomp's TestEmbeddedFilter keeps it equal to the library's, and
// `go test ./internal/sandbox/seccomp -update` writes it again): a
// process starting a command does not initialise go-seccomp-bpf's tables
// of every architecture (0.25-0.7 ms of each process's start).
//
//go:embed seccomp_amd64.bpf
var filterAMD64 []byte

func seccompProgram() ([]byte, error) { return filterAMD64, nil }
