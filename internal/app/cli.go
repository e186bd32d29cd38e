package app

import (
	"context"
	"log/slog"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/local"
)

// CLI is the server side of the command line, which paddock-server
// links and the client does not: serve, migrate, and a server
// in-process for a command's length.
var CLI = &local.Server{
	Start: func(ctx context.Context, cfg config.Config, logger *slog.Logger) (local.Running, error) {
		a, err := Start(ctx, cfg, logger)
		if err != nil {
			return nil, err
		}
		return a, nil
	},
	Migrate: Migrate,
}

// Address is the API's address, as clients reach it.
func (a *App) Address() string { return a.URL }
