//go:build !amd64

package sandbox

import "github.com/paddock-dev/paddock/internal/sandbox/seccomp"

// seccompProgram assembles the filter where none is embedded.
func seccompProgram() ([]byte, error) { return seccomp.Program() }
