package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/kube/crds"

	"github.com/paddock-dev/paddock/internal/executor"
)

func newKube(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "kube", Short: "Kubernetes: Paddock's custom resources (the controller runs in paddock serve with PADDOCK_KUBECONFIG) and the sandbox pods' executor",
		// They read no Paddock configuration: the executor runs in a pod
		// with no data directory.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil }}
	c.AddCommand(&cobra.Command{
		Use:   "crds",
		Short: "Print the Agent and Session custom resource definitions: paddock kube crds | kubectl apply -f -",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := g.io.Out.Write(crds.YAML)
			return err
		},
	}, newExecutor(g))
	return c
}

// newExecutor is the command a sandbox pod runs: it runs the session's
// commands with no sandbox of its own, so it refuses to run as root (a pod
// of the restricted Pod Security Standard never is).
func newExecutor(g *globals) *cobra.Command {
	var listen, workdir, deps, state, cache string
	var scratch []string
	cmd := &cobra.Command{
		Use:   "executor",
		Short: "Run a session's commands in its sandbox pod for the Paddock worker (mutual TLS; the pod is the sandbox)",
		Long: "The executor of a sandbox pod: it serves the worker holding the session's working copy over mutual TLS, " +
			"trusting client certificates of the authority in PADDOCK_EXECUTOR_CA (PEM), and runs each command once at most " +
			"with the worker's time and output limits. It isolates nothing itself: run it only as the non-root first process (PID 1) " +
			"of a pod that is the sandbox (Paddock's SandboxTemplate). After each command it kills every other process of the pod.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if os.Getuid() == 0 {
				return errors.New("paddock kube executor runs commands without a sandbox of its own and refuses to run as root: run it as the non-root user of a sandbox pod")
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(config.ExecutorCA(g.io.Getenv))) {
				return errors.New("PADDOCK_EXECUTOR_CA holds no PEM certificate: set it to the authority of the Paddock workers' certificates")
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			// No signal ends it (a command could send one): the pod's
			// end, a SIGKILL, does.
			logger := slog.New(slog.NewTextHandler(g.io.Err, nil))
			fmt.Fprintf(g.io.Err, "paddock executor: commands run unsandboxed in this pod, as uid %d\n", os.Getuid())
			return (&executor.Server{Workdir: workdir, Deps: deps, State: state, Clients: pool, Alone: true,
				Scratch: scratch, Cache: cache, Logger: logger}).Serve(c.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", fmt.Sprintf(":%d", executor.Port), "address to serve the worker on")
	cmd.Flags().StringVar(&workdir, "workdir", "/paddock/work", "the executor's copy of the working copy (on the pod's volume)")
	cmd.Flags().StringVar(&deps, "deps", "/paddock/deps", "the executor's copy of the session's dependency caches (on the pod's volume)")
	cmd.Flags().StringVar(&state, "state", "/paddock/state", "the executor's key and journal of runs (on the pod's volume)")
	cmd.Flags().StringArrayVar(&scratch, "scratch", nil, "a directory emptied before each command, as a new sandbox has it (/tmp, the home directory; repeatable)")
	cmd.Flags().StringVar(&cache, "cache", "", "the session's build cache, kept in a scratch directory, emptied only before an environment's setup")
	return cmd
}
