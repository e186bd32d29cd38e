package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
)

func newMigrate(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the store's schema migrations and exit (PADDOCK_DATABASE_URL, else the SQLite file in PADDOCK_DATA_DIR); `paddock serve` applies them too",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.cfg.DatabaseURL == "" {
				if err := os.MkdirAll(g.cfg.DataDir, 0o700); err != nil {
					return fmt.Errorf("data directory %s: %w", g.cfg.DataDir, err)
				}
			}
			s, err := sqlstore.Open(cmd.Context(), app.StoreDSN(g.cfg), nil)
			if err != nil {
				return err
			}
			defer s.Close()
			v, err := s.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "the store is at schema version %d (%s)\n", v, s.Dialect())
			return nil
		},
	}
}
