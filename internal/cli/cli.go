// Package cli implements the paddock command line. Every command writes to
// injected writers and talks to the HTTP API through the typed client, so
// each runs end to end in tests.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/datadir"
	"github.com/paddock-dev/paddock/internal/local"
	"github.com/paddock-dev/paddock/internal/terminal"
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	Getenv   func(string) string
	// Executable is the server program (paddock-server): client
	// commands start it as a background server when no server holds the
	// data directory, and serve and migrate run as it unless Server is
	// linked. Empty: client commands open the data directory in-process
	// through Server for their own length.
	Executable string
	// Server is the server side, linked into paddock-server and the
	// tests, never into the client (app.CLI gives it).
	Server *local.Server
}

// exitError carries an exit code and the reason printed for the person.
type exitError = terminal.ExitError

// Run runs the paddock command line and returns the process exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	root, g := newRoot(stdio)
	g.args = args
	defer g.close()
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Msg != "" {
			// Messages quote what agents, commands and servers said.
			fmt.Fprintln(stdio.Err, "paddock:", terminal.Visible(ee.Msg, true))
		}
		return ee.Code
	}
	fmt.Fprintln(stdio.Err, "paddock:", terminal.Visible(err.Error(), true))
	return 1
}

// globals are the flags every command shares.
type globals struct {
	io       IO
	args     []string // as given, for the server program to run as they are
	server   string
	dataDir  string
	cfg      config.Config
	logLevel slog.Level
	// local is the client of the data directory opened for this command;
	// closers stop what it started.
	local   *client.Client
	closers []func()
	// inProcess says this command started the server it talks to: the
	// server stops when the command ends.
	inProcess bool
}

func (g *globals) close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}

func newRoot(stdio IO) (*cobra.Command, *globals) {
	g := &globals{io: stdio}
	root := &cobra.Command{
		Use:           "paddock",
		Version:       Version,
		Short:         "Run AI coding-agent sessions durably and under governance",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(stdio.Getenv)
			if err != nil {
				return err
			}
			if g.server != "" {
				cfg.Server = g.server
			}
			if g.dataDir != "" {
				cfg.DataDir = g.dataDir
			}
			g.cfg = cfg
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.server, "server", "", "URL of the paddock server (default $PADDOCK_SERVER)")
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", "", "data directory (default $PADDOCK_DATA_DIR or ~/.paddock)")
	root.AddCommand(newServe(g), newRun(g), newAttach(g), newDemo(g), newApply(g), newSessions(g), newAgents(g), newPolicy(g), newApprovals(g), newSandbox(g), newGC(g), newStatus(g), newAudit(g), newWhoami(g), newLogin(g), newProjects(g), newMembers(g), newConnections(g), newSlack(g), newUsers(g), newTokens(g), newAdmin(g), newVersion(g), newMigrate(g), newKube(g), newServer(g))
	root.SetVersionTemplate("paddock {{.Version}}\n")
	// paddock sesions ls: a mistyped command is a usage error (2), as
	// it is for every command group.
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &exitError{Code: 2, Msg: fmt.Sprintf("unknown command %q for %q; see paddock --help", args[0], c.CommandPath())}
		}
		return nil
	}
	root.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	refuseUnknown(root)
	usageErrors(root)
	return root, g
}

// usageErrors makes bad flags and a wrong number of arguments exit 2 on
// every command, as unknown subcommands do (cobra's errors would exit 1,
// like a failure of the command itself).
func usageErrors(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		usageErrors(sub)
	}
	if !cmd.HasParent() {
		cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asUsage(err) })
	}
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error { return asUsage(args(c, a)) }
	}
}

func asUsage(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &exitError{Code: 2, Msg: err.Error()}
}

// refuseUnknown makes every command group exit 2 on an unknown subcommand
// (cobra would print help and exit 0), and print its help when bare.
func refuseUnknown(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknown(sub)
	}
	if cmd.HasSubCommands() && !cmd.Runnable() && cmd.HasParent() {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &exitError{Code: 2, Msg: fmt.Sprintf("unknown command %q for %q; see %s --help", args[0], c.CommandPath(), c.CommandPath())}
			}
			return c.Help()
		}
	}
}

// project is the project a command names, else the configured one.
func (g *globals) project(p string) string {
	if p != "" {
		return p
	}
	return g.cfg.Project
}

func (g *globals) logger() *slog.Logger {
	return g.cfg.Logger(g.io.Err)
}

// remote returns a client for the configured server. With none
// configured, it talks to the server holding the data directory (its lock
// records its address); when nobody holds it, it starts one in the
// background (see background), or, without an Executable to start,
// opens the data directory in-process for the command's length.
func (g *globals) remote() *client.Client {
	if g.cfg.Server != "" {
		return client.New(g.cfg.Server).WithToken(g.token(g.cfg.Server))
	}
	if g.local == nil {
		c, stop, err := g.open(context.Background(), false)
		if err != nil {
			return client.Failing(err)
		}
		g.closers = append(g.closers, stop)
		g.local = c
	}
	return g.local
}

// connect is remote for run and demo, which say what they started.
func (g *globals) connect(ctx context.Context) (*client.Client, func(), error) {
	if g.cfg.Server != "" {
		return client.New(g.cfg.Server).WithToken(g.token(g.cfg.Server)), func() {}, nil
	}
	return g.open(ctx, true)
}

func (g *globals) open(ctx context.Context, announce bool) (*client.Client, func(), error) {
	if g.io.Executable != "" {
		c, err := g.background(ctx, announce)
		if err != nil {
			return nil, nil, err
		}
		return c, func() {}, nil
	}
	if g.io.Server == nil {
		return nil, nil, local.ErrNoServerProgram
	}
	cfg := g.cfg
	cfg.Listen = "127.0.0.1:0"
	logger, closeLog := local.Logger(cfg.DataDir, g.io.Err, cfg.LogLevel)
	g.closers = append(g.closers, closeLog)
	a, err := g.io.Server.Start(ctx, cfg, logger)
	var inUse *datadir.InUseError
	if errors.As(err, &inUse) && inUse.URL != "" {
		if announce {
			fmt.Fprintf(g.io.Err, "using the paddock server at %s (it holds %s)\n", inUse.URL, cfg.DataDir)
		}
		return client.New(inUse.URL).WithToken(g.token(inUse.URL)), func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	g.inProcess = true
	if announce {
		fmt.Fprintf(g.io.Err, "started an in-process paddock server (data in %s)\n", cfg.DataDir)
	}
	return client.New(a.Address()).WithToken(g.token(a.Address())), a.Stop, nil
}

// asServer runs the server program in this process's place, with the
// arguments as given: the client does not link the server.
func (g *globals) asServer() error { return local.Exec(g.io.Executable, g.args) }

func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the paddock version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(g.io.Out, "paddock", Version)
		},
	}
}
