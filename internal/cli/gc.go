package cli

import (
	"cmp"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/terminal"
)

func newGC(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove working copies no longer needed: stopped sessions', failed sessions' past PADDOCK_RETAIN_FAILED, and leftovers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := g.remote().Review().GC(cmd.Context())
			if err == nil {
				terminal.Collected(g.io.Out, out)
			}
			return err
		},
	}
}

func newStatus(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The server's health at a glance (its administrators): nodes, sessions by status, parks, approvals waiting, queue lag, disk",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := g.remote().Status(cmd.Context())
			if err != nil || asJSON {
				return cmp.Or(err, json.NewEncoder(g.io.Out).Encode(st))
			}
			terminal.Status(g.io.Out, st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as JSON")
	return cmd
}
