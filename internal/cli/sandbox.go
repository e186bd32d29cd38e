package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

func newSandbox(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Run commands in the sandbox sessions use"}
	var workdir string
	var timeout time.Duration
	var maxOutput int64
	exec := &cobra.Command{
		Use:   "exec [--workdir DIR] [--timeout D] [--max-output N] -- COMMAND...",
		Short: "Run one command in the session sandbox and exit with its exit code",
		Long: "Run one command in the same bubblewrap sandbox sessions use: no network, read-only root, only --workdir writable.\n" +
			"As root, the command runs as the sandbox user (uid 61000), which must be able to reach --workdir.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			box, err := sandbox.NewBwrap(cmd.Context())
			if err != nil {
				return err
			}
			if workdir == "" {
				if workdir, err = os.Getwd(); err != nil {
					return err
				}
			}
			if timeout == 0 {
				timeout = g.cfg.CommandMax
			}
			if maxOutput == 0 {
				maxOutput = g.cfg.CommandMaxOutput
			}
			script := strings.Join(args, " ")
			if len(args) > 1 {
				script = shellJoin(args)
			}
			res, err := box.Run(cmd.Context(), sandbox.Command{Script: script, Workdir: workdir, Timeout: timeout, MaxOutput: maxOutput,
				Stdout: g.io.Out, Stderr: g.io.Err})
			if err != nil {
				return err
			}
			if res.Discarded > 0 {
				fmt.Fprintf(g.io.Err, "paddock: output truncated: %d bytes beyond the %d-byte limit were discarded\n", res.Discarded, maxOutput)
			}
			if res.TimedOut {
				fmt.Fprintf(g.io.Err, "paddock: timed out after %s; every process of the command was killed\n", timeout)
			}
			if res.ExitCode != 0 {
				return &exitError{code: res.ExitCode}
			}
			return nil
		},
	}
	exec.Flags().StringVar(&workdir, "workdir", "", "the writable working directory (default: the current directory)")
	exec.Flags().DurationVar(&timeout, "timeout", 0, "time limit (default $PADDOCK_COMMAND_MAX_SECONDS or 10m)")
	exec.Flags().Int64Var(&maxOutput, "max-output", 0, "output limit in bytes (default $PADDOCK_COMMAND_MAX_OUTPUT_BYTES or 10 MiB)")
	cmd.AddCommand(exec)
	return cmd
}

// shellJoin quotes argv words for bash so "sandbox exec -- ls -la 'a b'" runs them as given.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
