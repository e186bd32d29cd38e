package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/layer"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Egress is how sandboxed runs allowed the network reach it: through a
// proxy of their own, serving a Unix socket in Dir.
type Egress struct {
	Dir string
	// Resolver resolves the names commands connect to (the system's when
	// nil).
	Resolver egress.Resolver
	// Permit: see egress.Config.Permit.
	Permit []netip.Prefix
}

// provisionEnvironment makes the session's working copy and, when its
// agent declares a setup script, its environment: restored from the
// layer of an earlier identical setup, or built by running setup.
func (a *Activities) provisionEnvironment(ctx context.Context, s session.Session, sp spec.Agent) error {
	ctx = a.Copies.Bounded(ctx) // git on the copy, bounded as a command is
	env := sp.Environment
	var workdir, base string
	prepare := func() (string, error) {
		var detail string
		var err error
		workdir, base, detail, err = a.prepareWorkspace(ctx, s, sp)
		if err != nil {
			return "", nonRetryable(fmt.Errorf("prepare working copy: %w", err))
		}
		if err := a.Store.SetWorkspace(ctx, s.ID, a.Copies.Node, workdir, base); err != nil {
			return "", err
		}
		s.Workdir = workdir
		return detail, nil
	}
	if env.Setup == "" {
		return a.phase(ctx, s.ID, session.PhasePreparingEnvironment, prepare)
	}
	if a.Copies.Layers == nil {
		return nonRetryable(fmt.Errorf("agent %s declares an environment setup, but this server keeps no environment layers", sp.Name))
	}
	if _, ok := a.Copies.Layers.Of(s.ID); ok {
		// A retried provision that already has its environment.
		return a.phase(ctx, s.ID, session.PhasePreparingEnvironment, prepare)
	}
	// The key needs the manifests at the base commit, so the working copy
	// comes first; which phase it belongs to is known once the key is.
	start := a.Now()
	if _, err := prepare(); err != nil {
		return a.phaseSince(ctx, s.ID, session.PhasePreparingEnvironment, start, func() (string, error) { return "", err })
	}
	in, key, err := layerInputs(ctx, s, env, workdir, base)
	if err != nil {
		return nonRetryable(err)
	}
	l, ok, err := a.Copies.Layers.Acquire(key, s.ID)
	if err != nil {
		return err
	}
	if ok {
		return a.phaseSince(ctx, s.ID, session.PhasePreparingEnvironment, start, func() (string, error) {
			files, err := l.Restore(workdir, a.Copies.Cache(s), a.Copies.UID)
			if err != nil {
				return "", nonRetryable(fmt.Errorf("restore environment layer %s: %w", key[:12], err))
			}
			return fmt.Sprintf("working copy at %s; environment layer %s restored, setup skipped (%d files, %s)",
				clip.ID(base), key[:12], files, clip.Bytes(l.Bytes)), nil
		})
	}
	return a.phaseSince(ctx, s.ID, session.PhaseBuildingImage, start, func() (string, error) {
		return a.buildLayer(ctx, s, sp, base, in, key)
	})
}

// layerInputs are what the environment layer of session s's copy at
// workdir, at base, depends on, and the key naming it.
func layerInputs(ctx context.Context, s session.Session, env spec.EnvironmentSpec, workdir, base string) (layer.Inputs, string, error) {
	manifests, err := workspace.Tracked(ctx, workdir, base, layer.IsManifest)
	if err != nil {
		return layer.Inputs{}, "", fmt.Errorf("read the dependency manifests: %w", err)
	}
	in := layer.Inputs{Project: s.Project, Repo: s.Repo, Manifests: manifests, Setup: env.Setup, Network: env.Network.Setup,
		Env: env.Env, ReadOnly: env.ReadOnlyPaths, Toolchains: layer.Toolchains(sandbox.Environment(nil)["PATH"], env.ReadOnlyPaths)}
	if env.Reuse != spec.ReuseManifests {
		// By default a layer serves only the same files: setup may run
		// any of them (scripts/setup.sh, a postinstall), so a layer built
		// on one commit must not be trusted on another.
		if in.Tree, err = workspace.Tree(ctx, workdir, base); err != nil {
			return layer.Inputs{}, "", fmt.Errorf("read the base tree: %w", err)
		}
	}
	return in, in.Key(), nil
}

// environmentAgain gives a copy made again on this node (its node was
// lost) its environment: the layer of the same inputs when this node has
// one, else built by running setup again. What the checkpoint recorded
// is written over it again, so the agent's own changes win.
func (a *Activities) environmentAgain(ctx context.Context, s session.Session, sp spec.Agent, files []workspace.Change) (string, error) {
	ctx = a.Copies.Bounded(ctx) // git on the copy, bounded as a command is
	env := sp.Environment
	if env.Setup == "" {
		return "", nil
	}
	if a.Copies.Layers == nil {
		return "", fmt.Errorf("agent %s declares an environment setup, but this server keeps no environment layers", sp.Name)
	}
	in, key, err := layerInputs(ctx, s, env, s.Workdir, s.BaseCommit)
	if err != nil {
		return "", err
	}
	var what string
	if l, ok, err := a.Copies.Layers.Acquire(key, s.ID); err != nil {
		return "", err
	} else if ok {
		if _, err := l.Restore(s.Workdir, a.Copies.Cache(s), a.Copies.UID); err != nil {
			return "", fmt.Errorf("restore environment layer %s: %w", key[:12], err)
		}
		what = "environment layer " + key[:12] + " restored"
	} else {
		if what, err = a.buildLayer(ctx, s, sp, s.BaseCommit, in, key); err != nil {
			return "", err
		}
	}
	if err := workspace.WriteBack(s.Workdir, files); err != nil {
		return "", err
	}
	if err := a.Copies.Hand(s.Workdir); err != nil {
		return "", err
	}
	return what, nil
}

// buildLayer runs the setup script in the session's sandbox on its working
// copy, its dependency caches writable and the network its environment
// allows for setup, then saves the result as the layer named key.
func (a *Activities) buildLayer(ctx context.Context, s session.Session, sp spec.Agent, base string, in layer.Inputs, key string) (string, error) {
	ctx = a.Copies.Bounded(ctx) // git on the copy, bounded as a command is
	env := sp.Environment
	b, err := a.Copies.Layers.Build(a.Copies.Scratch(s, "deps"))
	if err != nil {
		return "", err
	}
	// A layer is bounded by the session's disk budget (what setup could
	// write at all), or by the layers' whole bound.
	if b.Limit = a.Copies.Budget(s.Workdir); b.Limit == 0 {
		b.Limit = a.Copies.Layers.MaxBytes
	}
	done := false
	defer func() {
		if !done {
			b.Abort()
		}
	}()
	place := a.place(s, sp)
	place.Deps, place.DepsWritable = b.Deps(), true
	ep, err := a.openEgress(ctx, s.ID, "", "setup", "", env.Network.Setup)
	if err != nil {
		return "", err
	}
	if ep != nil {
		place.Egress = ep.Socket()
	}
	release, err := a.Copies.Sandboxed(ctx, s.ID)
	if err != nil {
		if ep != nil {
			ep.close()
		}
		return "", err
	}
	out := &clip.TailWriter{Max: 16 << 10}
	res, err := a.Shell.Run(ctx, sandbox.Command{Place: place, Script: env.Setup, Timeout: time.Duration(env.SetupTimeout),
		MaxOutput: 1 << 40, Stdout: out, Stderr: out})
	refused := ""
	if ep != nil {
		refused = ep.close()
	}
	release()
	if err != nil {
		return "", nonRetryable(fmt.Errorf("setup could not run: %w", err))
	}
	if res.TimedOut || res.ExitCode != 0 {
		why := fmt.Sprintf("exit status %d", res.ExitCode)
		if res.TimedOut {
			why = "timed out after " + time.Duration(env.SetupTimeout).String()
		}
		msg := fmt.Sprintf("environment setup failed (%s, after %s); the last of its output:\n%s", why, res.Duration.Round(time.Millisecond), out.String())
		if refused != "" {
			msg += "\n" + refused
		}
		return "", nonRetryable(errors.New(msg))
	}
	changed, err := workspace.RestoreTracked(ctx, s.Workdir, base)
	if err != nil {
		return "", nonRetryable(fmt.Errorf("after setup: %w", err))
	}
	if len(changed) > 0 {
		if err := a.Copies.Hand(s.Workdir); err != nil {
			return "", err
		}
	}
	paths, err := workspace.Untracked(ctx, s.Workdir)
	if err != nil {
		return "", nonRetryable(fmt.Errorf("after setup: %w", err))
	}
	files, err := b.Capture(s.Workdir, paths)
	if err == nil && place.Cache != "" {
		var n int
		n, err = b.CaptureCache(place.Cache)
		files += n
	}
	if err != nil {
		return "", nonRetryable(fmt.Errorf("save the environment layer: %w", err))
	}
	l, err := b.Commit(layer.Meta{Key: key, Inputs: in, SetupSeconds: res.Duration.Seconds(), Files: files}, s.ID)
	done = true
	if err != nil {
		return "", nonRetryable(fmt.Errorf("save the environment layer: %w", err))
	}
	_, _ = a.Copies.Layers.Evict()
	detail := fmt.Sprintf("setup ran in %s; environment layer %s saved (%d files, %s)", res.Duration.Round(time.Millisecond), key[:12], files, clip.Bytes(l.Bytes))
	if len(changed) > 0 {
		detail += fmt.Sprintf("; setup's changes to %d tracked file(s) (%s) were undone: the environment holds only untracked files and caches",
			len(changed), strings.Join(changed[:min(3, len(changed))], ", "))
	}
	return detail, nil
}

// place is where session s's sandboxes run: its working copy and build
// cache, its environment's variables and read-only paths, and its
// layer's dependency caches (read-only).
func (a *Activities) place(s session.Session, sp spec.Agent) sandbox.Place {
	p := sandbox.Place{Session: s.ID, Workdir: s.Workdir, Repository: true, Cache: a.Copies.Cache(s), Env: sp.Environment.Env, ReadOnly: sp.Environment.ReadOnlyPaths}
	if l, ok := a.Copies.Layers.Of(s.ID); ok {
		p.Deps = l.Deps()
	}
	return p
}

// maxNetworkEvents bounds the connections of one run recorded one by
// one; the rest are counted in one notice (a command could otherwise
// flood the transcript with refused requests on a keep-alive connection).
const maxNetworkEvents = 200

// egressRun is the proxy of one sandboxed run allowed the network.
type egressRun struct {
	ep       *egress.Endpoint
	mu       sync.Mutex
	refused  []string
	recorded int
	more     int // connections beyond maxNetworkEvents
	moreRefs int // of which refused
	notice   func(text string)
}

// Socket is the proxy's socket, to bind into the sandbox.
func (r *egressRun) Socket() string { return r.ep.Socket }

// close stops the proxy once the run has ended, every connection
// recorded, and says what was refused, for the command's output: not
// every client prints the proxy's reason (curl shows only "403").
func (r *egressRun) close() string {
	_ = r.ep.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.more > 0 {
		r.notice(fmt.Sprintf("%d more connections through the egress proxy (%d refused) were counted, not recorded one by one", r.more, r.moreRefs))
	}
	if len(r.refused) == 0 {
		return ""
	}
	return "[egress refused: " + strings.Join(r.refused, "; ") + "]"
}

// openEgress serves a proxy allowing allow for one sandboxed run of the
// session (setup, or the command of call callID), each connection
// recorded in the transcript; nil when allow is empty (no network).
func (a *Activities) openEgress(ctx context.Context, sessionID, turnID, phase, callID string, allow []string) (*egressRun, error) {
	if len(allow) == 0 {
		return nil, nil
	}
	if a.Egress == nil || a.Egress.Dir == "" {
		return nil, nonRetryable(fmt.Errorf("the agent's environment allows network, but this server has no egress proxy"))
	}
	bg := context.WithoutCancel(ctx)
	run := &egressRun{notice: func(text string) {
		data, _ := json.Marshal(session.TextData{Text: text})
		_, _ = a.Store.AppendEvent(bg, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventNotice, Data: data})
	}}
	ep, err := egress.Open(a.Egress.Dir, a.Copies.UID, egress.Config{
		Allow:    allow,
		Resolver: a.Egress.Resolver,
		Permit:   a.Egress.Permit,
		Now:      a.Now,
		Record: func(r egress.Record) {
			d := session.NetworkData{Phase: phase, CallID: callID, Method: r.Method, Host: r.Host, Port: r.Port, Allowed: r.Allowed,
				Reason: r.Reason, Error: r.Error, Status: r.Status, BytesUp: r.Up, BytesDown: r.Down, DurationMs: r.Duration.Milliseconds()}
			if r.Addr.IsValid() {
				d.Addr = r.Addr.String()
			}
			run.mu.Lock()
			if msg := egress.Refusal(r.Host, r.Reason); !r.Allowed && len(run.refused) < 10 && !slices.Contains(run.refused, msg) {
				run.refused = append(run.refused, msg)
			}
			if run.recorded >= maxNetworkEvents {
				run.more++
				if !r.Allowed {
					run.moreRefs++
				}
				run.mu.Unlock()
				return
			}
			run.recorded++
			run.mu.Unlock()
			data, _ := json.Marshal(d)
			_, _ = a.Store.AppendEvent(bg, session.Event{SessionID: sessionID, TurnID: turnID, Kind: session.EventNetwork, Data: data})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	run.ep = ep
	return run, nil
}
