package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/overlay"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/volume"
)

// sandbox gives the activities their sandbox and the sessions' volumes.
// Without bubblewrap, sessions that run commands fail at start with what
// to install; Paddock never runs them unsandboxed. A limit this machine
// cannot enforce makes them fail too, unless the operator accepted it
// unenforced (PADDOCK_UNENFORCED_LIMITS), which is announced.
func (a *App) sandbox(ctx context.Context, acts *durable.Activities, cfg config.Config) error {
	if os.Getuid() == 0 {
		// The sandbox user must traverse the data directory to its working copies.
		if err := os.Chmod(cfg.DataDir, 0o711); err != nil {
			return err
		}
		acts.Copies.UID = sandbox.DefaultUID
	}
	box, limits, err := a.bwrap(ctx, cfg, filepath.Join(cfg.DataDir, "workspaces"))
	if err != nil {
		a.logger.Warn("SANDBOX UNAVAILABLE: sessions whose agents can run commands will fail at start", "reason", err)
		acts.SandboxErr = err
		acts.FetchErr = fmt.Errorf("bubblewrap cannot sandbox this node's fetches from forges: %w", err)
		return nil
	}
	acts.Shell = box
	acts.Copies.HostWork = box
	if err := environments(acts, cfg); err != nil {
		return err
	}
	m, err := mirrors(box, acts, cfg)
	if err != nil {
		return err
	}
	acts.Mirrors = m
	if limits == nil {
		limits = &sandbox.LimitError{}
	}
	for _, l := range box.Unenforced() {
		if cfg.Unenforced[l] {
			a.logger.Warn("UNENFORCED LIMIT accepted by PADDOCK_UNENFORCED_LIMITS: commands' " + l + " is not bounded")
		}
	}
	size := cfg.SessionMaxDisk
	if size == 0 {
		size = config.DefaultSessionMaxDisk
	}
	if verr := volume.Probe(); verr != nil {
		if !cfg.Unenforced["disk"] {
			limits.Missing = append(limits.Missing, fmt.Sprintf("this machine cannot bound sessions' disk (%v)", verr))
		} else {
			a.logger.Warn("UNENFORCED LIMIT accepted by PADDOCK_UNENFORCED_LIMITS: sessions' disk is not bounded", "reason", verr)
		}
	} else {
		files := cfg.SessionMaxFiles
		if files == 0 {
			files = config.DefaultSessionMaxFiles
		}
		v := &volume.Volumes{Dir: filepath.Join(cfg.DataDir, "volumes"), Size: size, Files: files, UID: acts.Copies.UID, Lend: box.Lent.Caches()}
		acts.Copies.Volumes = v
	}
	if len(limits.Missing) > 0 {
		acts.LimitErr = limits
		a.logger.Warn("LIMITS UNENFORCEABLE: sessions whose agents can run commands will fail at start", "reason", limits)
	}
	if box.MaxCPUs != sandbox.DefaultMaxCPUs || size != config.DefaultSessionMaxDisk {
		a.logger.Warn("sandbox budgets differ from the defaults", "cpusPerCommand", box.MaxCPUs, "diskBytesPerSession", size)
	}
	return nil
}

// bwrap is the configured bubblewrap sandbox, probed (reachable, when
// set, reached by its commands' user), closed with the app. limits are
// what this machine cannot enforce and the operator did not accept
// (nil: none); an error says why there is no sandbox.
func (a *App) bwrap(ctx context.Context, cfg config.Config, reachable string) (*sandbox.Bwrap, *sandbox.LimitError, error) {
	box, err := sandbox.Configured(cfg)
	var limits *sandbox.LimitError
	if errors.As(err, &limits) {
		err = nil
	}
	if err == nil {
		err = box.Probe(ctx)
	}
	if err == nil && reachable != "" {
		err = box.Reachable(reachable)
	}
	if err != nil {
		if box != nil {
			box.Close()
		}
		return nil, nil, err
	}
	a.closers = append(a.closers, func() error { box.Close(); return nil })
	return box, limits, nil
}

// mirrors are the node's mirrors of remote repositories, fetched with
// box: git in the sandbox as the sandbox user, its one way out the
// forge's address (an egress proxy's socket, reached through the
// forwarder), the credential on its standard input.
func mirrors(box *sandbox.Bwrap, acts *durable.Activities, cfg config.Config) (*mirror.Cache, error) {
	var err error
	if box.Forwarder, err = forwarder(filepath.Join(cfg.DataDir, "bin")); err != nil {
		return nil, fmt.Errorf("egress forwarder: %w", err)
	}
	uid := 0
	if os.Getuid() == 0 {
		uid = sandbox.DefaultUID
	}
	return &mirror.Cache{Dir: filepath.Join(cfg.DataDir, "mirrors"), Box: box, EgressDir: acts.Egress.Dir, UID: uid,
		Permit: cfg.EgressPermit, TestingAllowLoopback: cfg.TestingForgeLoopback, MaxBytes: cfg.MirrorsMax}, nil
}

// fetches gives a node whose commands run in pods a bubblewrap sandbox
// of its own for what it fetches from forges: the pods never hold a
// forge's credential, and the fetch never runs unsandboxed. Where
// bubblewrap cannot run (a restricted pod without user namespaces),
// sessions on remote repositories are refused at creation, saying why.
func (a *App) fetches(ctx context.Context, acts *durable.Activities, cfg config.Config) error {
	// The fetches run with the limits this machine enforces, as they do
	// without pods.
	var err error
	if os.Getuid() == 0 {
		// The sandbox user must traverse the data directory to the mirrors.
		err = os.Chmod(cfg.DataDir, 0o711)
	}
	var box *sandbox.Bwrap
	if err == nil {
		box, _, err = a.bwrap(ctx, cfg, "")
	}
	if err != nil {
		acts.FetchErr = fmt.Errorf("bubblewrap cannot sandbox this node's fetches from forges: %w", err)
		a.logger.Warn("REMOTE REPOSITORIES UNAVAILABLE: sessions on them are refused", "reason", acts.FetchErr)
		return nil
	}
	m, err := mirrors(box, acts, cfg)
	if err != nil {
		return err
	}
	acts.Mirrors = m
	return nil
}

// checkouts makes working copies overlays of shared checkouts when this
// process can mount them (made in constant time, whatever the
// repository's size), else clones. No mount outlives the process: a
// session's volume and overlay are mounted again when next needed.
func (a *App) checkouts(c *copies.Set, dataDir string) {
	a.closers = append(a.closers, func() error { return c.UnmountAll(context.Background()) })
	dir := filepath.Join(dataDir, "checkouts")
	if err := overlay.Probe(dir); err != nil {
		a.logger.Info("working copies are clones of their repositories", "reason", err)
		return
	}
	c.Checkouts = &overlay.Checkouts{Dir: dir, UID: c.UID}
	a.logger.Info("working copies are overlays of shared checkouts", "dir", dir)
}
