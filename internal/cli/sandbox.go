package cli

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

func newSandbox(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Run commands in the sandbox sessions use"}
	var workdir string
	var timeout time.Duration
	var maxOutput int64
	exec := &cobra.Command{Use: "exec [--workdir DIR] [--timeout D] [--max-output N] -- COMMAND...", Short: "Run one command in the session sandbox and exit with its exit code", Long: "Run one command in the same bubblewrap sandbox sessions use: no network, the host's system trees read-only, \n" +
		"only --workdir writable, the same CPU, memory, process, time and output limits. Nothing it starts outlives it, \n" +
		"also on SIGINT, SIGTERM or its time limit. As root, the command runs as the sandbox user (uid 61000): --workdir\n" +
		"must be reachable by it and owned by it (chown -R 61000:61000 DIR) for the command to write there.", Args: cobra.MinimumNArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		box, err := sandbox.Configured(g.cfg)
		if box != nil {
			defer box.Close() // no cgroup outlives the command
		}
		if err != nil {
			return err
		}
		if workdir == "" {
			if workdir, err = os.Getwd(); err != nil {
				return err
			}
		}
		if err := box.Writable(workdir); err != nil {
			return &exitError{Code: 2, Msg: err.Error()}
		}
		if timeout == 0 {
			timeout = g.cfg.CommandMax
		}
		if maxOutput == 0 {
			maxOutput = g.cfg.CommandMaxOutput
		}
		script := strings.Join(args, " ")
		if len(args) > 1 {
			script = sandbox.Quote(args)
		}
		cache, err := box.CacheFor(filepath.Join(g.cfg.DataDir, "caches"), workdir)
		if err != nil {
			return err
		}
		res, err := box.Run(ctx, sandbox.Command{Place: sandbox.Place{Workdir: workdir, Cache: cache}, Script: script, Timeout: timeout, MaxOutput: maxOutput,
			Stdout: g.io.Out, Stderr: g.io.Err})
		if ctx.Err() != nil {
			return &exitError{Code: 130, Msg: "interrupted: the command and everything it started were killed"}
		}
		if err != nil {
			return err
		}
		if res.Discarded > 0 {
			fmt.Fprintf(g.io.Err, "paddock: output truncated: %d bytes beyond the %d-byte limit were discarded\n", res.Discarded, maxOutput)
		}
		if res.TimedOut {
			fmt.Fprintf(g.io.Err, "paddock: timed out after %s; every process of the command was killed\n", timeout)
		}
		if res.ExitCode == 1 {
			// bubblewrap's own failure is 1 too: say so when it was.
			if perr := box.Probe(ctx); perr != nil {
				fmt.Fprintln(g.io.Err, "paddock:", perr)
			}
		}
		if res.ExitCode != 0 {
			return &exitError{Code: res.ExitCode}
		}
		return nil
	}}
	exec.Flags().StringVar(&workdir, "workdir", "", "the writable working directory (default: the current directory)")
	exec.Flags().DurationVar(&timeout, "timeout", 0, "time limit (default $PADDOCK_COMMAND_MAX_SECONDS or 10m)")
	exec.Flags().Int64Var(&maxOutput, "max-output", 0, "output limit in bytes (default $PADDOCK_COMMAND_MAX_OUTPUT_BYTES or 10 MiB)")
	cmd.AddCommand(exec)
	return cmd
}
