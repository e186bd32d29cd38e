package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newGC(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove working copies no longer needed: stopped sessions', failed sessions' past PADDOCK_RETAIN_FAILED, and leftovers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := g.remote().GC(cmd.Context())
			if err != nil {
				return err
			}
			var total int64
			for _, c := range out {
				total += c.Bytes
				fmt.Fprintf(g.io.Out, "removed %s's working copy (%s): %s\n", c.SessionID, c.Reason, bytesHuman(c.Bytes))
			}
			fmt.Fprintf(g.io.Out, "%d working copies removed, %s freed\n", len(out), bytesHuman(total))
			return nil
		},
	}
}

// bytesHuman prints a byte count in binary units.
func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
