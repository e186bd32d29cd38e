// Command paddock runs AI coding-agent sessions durably and under
// governance. It is the client: it talks to a server, and links none of
// it, so it starts at once. paddock-server, installed beside it, is the
// server it starts in the background and runs for serve and migrate.
package main

import (
	"context"
	"os"

	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/local"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Executable: local.ServerProgram()}))
}
