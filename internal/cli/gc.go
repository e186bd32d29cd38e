package cli

import (
	"fmt"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/spf13/cobra"
)

func newGC(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove working copies no longer needed: stopped sessions', failed sessions' past PADDOCK_RETAIN_FAILED, and leftovers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := g.remote().Review().GC(cmd.Context())
			if err != nil {
				return err
			}
			var total int64
			for _, c := range out {
				total += c.Bytes
				if c.Mirror != "" {
					fmt.Fprintf(g.io.Out, "removed the mirror of %s (%s): %s\n", c.Mirror, c.Reason, clip.Bytes(c.Bytes))
					continue
				}
				fmt.Fprintf(g.io.Out, "removed %s's working copy (%s): %s\n", c.SessionID, c.Reason, clip.Bytes(c.Bytes))
			}
			fmt.Fprintf(g.io.Out, "%d working copies removed, %s freed\n", len(out), clip.Bytes(total))
			return nil
		},
	}
}
