package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/app"
)

func newMigrate(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the store's schema migrations and exit (PADDOCK_DATABASE_URL, else the SQLite file in PADDOCK_DATA_DIR); `paddock serve` applies them too",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, dialect, err := app.Migrate(cmd.Context(), g.cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "the store is at schema version %d (%s)\n", v, dialect)
			return nil
		},
	}
}
