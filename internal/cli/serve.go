package cli

import (
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/local"
)

func newServe(g *globals) *cobra.Command {
	var listen, temporalAddr string
	var idleExit time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the paddock server: API, worker and (unless --temporal-address) an embedded Temporal server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.io.Server == nil {
				return g.asServer()
			}
			cfg := g.cfg
			if listen != "" {
				cfg.Listen = listen
			}
			if temporalAddr != "" {
				cfg.TemporalAddress = temporalAddr
			}
			cfg.Background = idleExit > 0
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			logger := g.logger()
			a, err := g.io.Server.Start(ctx, cfg, logger)
			var inUse *datadir.InUseError
			if errors.As(err, &inUse) && inUse.Background && !cfg.Background {
				// A client command's background server: this one takes over.
				fmt.Fprintf(g.io.Out, "stopping the background paddock server on %s (process %d) to serve it here\n", cfg.DataDir, inUse.PID)
				if err := local.Stop(inUse); err != nil {
					return err
				}
				a, err = g.io.Server.Start(ctx, cfg, logger)
			}
			if err != nil {
				return err
			}
			engine := "embedded Temporal"
			if cfg.TemporalAddress != "" {
				engine = "Temporal at " + cfg.TemporalAddress
			}
			fmt.Fprintf(g.io.Out, "paddock serving on %s (%s, data in %s)\n", a.Address(), engine, cfg.DataDir)
			if !cfg.Background {
				fmt.Fprintf(g.io.Out, "use it from another terminal: export PADDOCK_SERVER=%s\n", a.Address())
			}
			var idle <-chan struct{}
			if idleExit > 0 {
				idle = a.Idle(ctx, idleExit)
			}
			select {
			case <-ctx.Done():
			case <-idle:
				fmt.Fprintf(g.io.Out, "no request for %s and no session queued or running: ending\n", idleExit)
			case err := <-a.Lost():
				a.Stop()
				return err
			}
			fmt.Fprintln(g.io.Out, "shutting down…")
			a.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on (default $PADDOCK_LISTEN or 127.0.0.1:7470)")
	cmd.Flags().DurationVar(&idleExit, "idle-exit", 0, "end after this long with no request and no session queued or running (0: never)")
	cmd.Flags().StringVar(&temporalAddr, "temporal-address", "", "host:port of an external Temporal cluster (default: embedded server)")
	return cmd
}
