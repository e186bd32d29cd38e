// Command paddock runs AI coding-agent sessions durably and under governance.
package main

import (
	"context"
	"os"

	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/egress"
)

func main() {
	// Inside a sandbox allowed the network, this binary is the forwarder.
	egress.Reexec()
	self, _ := os.Executable() // client commands start it as a background server
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Executable: self}))
}
