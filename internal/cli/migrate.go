package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMigrate(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the store's schema migrations and exit (PADDOCK_DATABASE_URL, else the SQLite file in PADDOCK_DATA_DIR); `paddock serve` applies them too",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.io.Server == nil {
				return g.asServer()
			}
			v, dialect, err := g.io.Server.Migrate(cmd.Context(), g.cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "the store is at schema version %d (%s)\n", v, dialect)
			return nil
		},
	}
}
