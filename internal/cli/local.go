package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/local"
)

// background is a client of the server holding the data directory, one
// started in the background when none does (see local.Connect); its
// start is always said, as a process now outlives the command.
func (g *globals) background(ctx context.Context, announce bool) (*client.Client, error) {
	url, started, err := local.Connect(ctx, g.io.Executable, g.cfg.DataDir, g.io.Getenv)
	if err != nil {
		return nil, err
	}
	var outdated string // after an upgrade or a rebuild
	if !started {
		outdated = local.Outdated(g.io.Executable, g.cfg.DataDir)
	}
	switch {
	case started:
		fmt.Fprintf(g.io.Err, "started a background paddock server on %s (it ends after %s unused; paddock server stop ends it now; log: %s)\n",
			g.cfg.DataDir, local.Idle, filepath.Join(g.cfg.DataDir, local.Log))
	case outdated != "":
		fmt.Fprintln(g.io.Err, outdated)
	case announce:
		fmt.Fprintf(g.io.Err, "using the paddock server at %s (it holds %s; it runs with the settings of the command that started it: "+
			"paddock server stop, then this command again, to apply new ones)\n", url, g.cfg.DataDir)
	}
	return client.New(url).WithToken(g.token(url)), nil
}

func newServer(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "server", Short: "The server holding the data directory: its status, or stop it"}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Say which server holds the data directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(g.io.Out, local.Status(g.cfg.DataDir))
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "stop",
		Short: "Stop the server holding the data directory (sessions resume when one starts again)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, held := datadir.Holder(g.cfg.DataDir)
			if !held {
				fmt.Fprintf(g.io.Out, "no paddock server holds %s\n", g.cfg.DataDir)
				return nil
			}
			if err := local.Stop(h); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "stopped the paddock server (process %d) on %s\n", h.PID, g.cfg.DataDir)
			return nil
		},
	})
	return cmd
}
