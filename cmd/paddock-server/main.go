// Command paddock-server runs Paddock's server (paddock-server serve):
// the API, the web app, the worker and the embedded Temporal server. It
// answers every command of paddock too; paddock, the client, runs it
// for serve and migrate and starts it as a person's background server.
package main

import (
	"context"
	"os"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/egress"
)

func main() {
	// Inside a sandbox allowed the network, this binary is the forwarder.
	egress.Reexec()
	self, _ := os.Executable() // client commands start it as a background server
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Executable: self, Server: app.CLI}))
}
