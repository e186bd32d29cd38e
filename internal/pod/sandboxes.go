package pod

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/executor"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// Keys keeps each session's executor key (its fingerprint) as first met,
// where every node reads it and no user of the cluster writes it: the
// store, not the session's claim, which whoever may update claims could
// reset.
type Keys interface {
	// Keep returns the key kept for session, keeping key if none was.
	Keep(ctx context.Context, session, key string) (string, error)
}

// Sandboxes runs each session's commands in its Sandbox's pod.
type Sandboxes struct {
	Client client.Client
	Keys   Keys
	Config Config
	// Cert is the worker's certificate, of the authority Config.CA.
	Cert tls.Certificate
	// Owner owns what commands write back into working copies (negative:
	// the worker's own user).
	Owner int
	// Limit bounds what one command writes back (its session's disk).
	Limit int64
	// Gateway routes the pods of commands allowed the network to their
	// runs' egress proxies (nil: no command may have network).
	Gateway *egress.Gateway
	// Ready bounds the wait for a sandbox to come up (default 5 minutes).
	Ready  time.Duration
	Logger *slog.Logger
	Now    func() time.Time

	install   sync.Mutex
	installed *unstructured.Unstructured // the template, once installed

	mu      sync.Mutex
	clients map[string]*executor.Client // by session, with the address it dials
	pins    map[string]string           // sessions' kept keys, as this node read them
}

// transferTimeout bounds one push or pull of a working copy.
const transferTimeout = 10 * time.Minute

// ErrNotReady says a sandbox did not come up in time; the message says
// what it waits for.
var ErrNotReady = errors.New("the session's sandbox pod is not ready")

func (s *Sandboxes) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Install puts the template, its warm pool and the network policy in
// place (idempotent) and checks that what is there is Paddock's: an
// object of the same name made by someone else (another tenant of the
// namespace) is refused, never used. It returns the template. Once
// installed, each call (each command) checks the network policy again,
// and installs again when it was deleted or changed.
func (s *Sandboxes) Install(ctx context.Context) (*unstructured.Unstructured, error) {
	s.install.Lock()
	defer s.install.Unlock()
	if s.installed != nil {
		err := s.alone(ctx)
		if err == nil {
			return s.installed, nil
		}
		if s.Logger != nil {
			s.Logger.Warn("sandbox network policy", "err", err)
		}
		s.installed = nil
	}
	tmpl, err := Template(s.Config)
	if err != nil {
		return nil, err
	}
	np, err := toUnstructured(NetworkPolicy(s.Config))
	if err != nil {
		return nil, err
	}
	policy := &unstructured.Unstructured{Object: np}
	for _, want := range []*unstructured.Unstructured{policy, tmpl, WarmPool(s.Config, tmpl.GetName())} {
		kind := want.GetObjectKind().GroupVersionKind().Kind
		if err := s.Client.Create(ctx, want.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("install the sandbox %s %s/%s: %w", kind, s.Config.Namespace, want.GetName(), err)
		}
		got := object(want.GroupVersionKind())
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			return nil, fmt.Errorf("read back the sandbox %s %s/%s: %w", kind, s.Config.Namespace, want.GetName(), err)
		}
		if want == policy && !s.exact(got) {
			// The policy's name is fixed: an older Paddock's, or one
			// planted under its name (even one holding Paddock's rules
			// and more), becomes exactly this one.
			got.Object["spec"] = want.Object["spec"]
			got.SetLabels(want.GetLabels())
			if err := s.Client.Update(ctx, got); err != nil {
				return nil, fmt.Errorf("update the sandbox %s %s/%s: %w", kind, s.Config.Namespace, want.GetName(), err)
			}
		}
		if !contains(got.Object["spec"], want.Object["spec"]) || got.GetLabels()[managedBy] != "paddock" {
			return nil, fmt.Errorf("%w: the %s %s/%s is not the one Paddock makes (the namespace must be Paddock's alone: delete it, and take others' rights there away)", ErrForeign, kind, s.Config.Namespace, want.GetName())
		}
	}
	if err := s.alone(ctx); err != nil {
		return nil, err
	}
	if err := s.noCNIPolicies(ctx); err != nil {
		return nil, err
	}
	s.installed = tmpl
	return tmpl, nil
}

// cniPolicies are the network policies of CNIs that add to Kubernetes'
// own (an allow rule of one could open the sandbox pods), by kind with no
// version: each is listed in the version the cluster serves (Antrea's in
// v1alpha1 before 1.13, v1beta1 after). Calico's are one list served
// under two groups: its CRDs' and, when installed, its API server's
// (which asks for rights on tiers too), so the first served is read.
var cniPolicies = [][]schema.GroupKind{
	{{Group: "cilium.io", Kind: "CiliumNetworkPolicy"}},
	{{Group: "crd.projectcalico.org", Kind: "NetworkPolicy"}, {Group: "projectcalico.org", Kind: "NetworkPolicy"}},
	{{Group: "crd.antrea.io", Kind: "NetworkPolicy"}},
}

// noCNIPolicies checks that the sandboxes' namespace holds none of the
// cniPolicies the cluster serves. Checked at install and by the reaper
// (a look at the cluster's kinds each time), not before each command.
func (s *Sandboxes) noCNIPolicies(ctx context.Context) error {
	ns := s.Config.Namespace
	for _, kinds := range cniPolicies {
		for _, k := range kinds {
			m, err := s.Client.RESTMapper().RESTMapping(k)
			if meta.IsNoMatchError(err) {
				continue // not served here
			}
			if err != nil {
				return fmt.Errorf("look up the %s %ss, none of which may select the sandbox pods: %w", k.Group, k.Kind, err)
			}
			var l unstructured.UnstructuredList
			l.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(k.Kind + "List"))
			if err := s.Client.List(ctx, &l, client.InNamespace(ns), client.Limit(1)); err != nil {
				return fmt.Errorf("list the %s %ss of namespace %s, none of which may select the sandbox pods (may Paddock list them? see deploy/kubernetes/rbac.yaml): %w", k.Group, k.Kind, ns, err)
			}
			if len(l.Items) > 0 {
				return fmt.Errorf("%w: %s %s/%s (%s) is not Paddock's, and it adds to Paddock's NetworkPolicy: it could open the sandbox pods to more than their gateway (the namespace must be Paddock's alone: delete it, and take others' rights there away)",
					ErrForeign, k.Kind, ns, l.Items[0].GetName(), k.Group)
			}
			break // the first group served holds them
		}
	}
	return nil
}

// alone checks that Paddock's is the only NetworkPolicy of the sandboxes'
// namespace, exactly as Paddock made it: policies add up, so another
// could open the pods to more, and without Paddock's they are open.
func (s *Sandboxes) alone(ctx context.Context) error {
	var l networkingv1.NetworkPolicyList
	if err := s.Client.List(ctx, &l, client.InNamespace(s.Config.Namespace)); err != nil {
		return fmt.Errorf("list the NetworkPolicies of namespace %s: %w", s.Config.Namespace, err)
	}
	if !slices.ContainsFunc(l.Items, func(np networkingv1.NetworkPolicy) bool { return np.Name == policyName }) {
		return fmt.Errorf("%w: NetworkPolicy %s/%s is gone: it is made again before the next command", ErrForeign, s.Config.Namespace, policyName)
	}
	for _, np := range l.Items {
		if np.Name == policyName && !s.exactly(np.Spec) {
			return fmt.Errorf("%w: NetworkPolicy %s/%s was changed: it is made Paddock's again before the next command", ErrForeign, np.Namespace, np.Name)
		}
		if np.Name != policyName {
			return fmt.Errorf("%w: NetworkPolicy %s/%s is not Paddock's, and network policies add up: it could open the sandbox pods to more than their gateway (the namespace must be Paddock's alone: delete it, and take others' rights there away)", ErrForeign, np.Namespace, np.Name)
		}
	}
	return nil
}

// exact says whether the policy got is exactly Paddock's: a policy
// holding Paddock's rules and more (a selector matching no sandbox, a
// port range) would open the pods.
func (s *Sandboxes) exact(got *unstructured.Unstructured) bool {
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &np); err != nil {
		return false
	}
	return s.exactly(np.Spec)
}

// exactly says whether a policy's spec is Paddock's, no more, no less.
func (s *Sandboxes) exactly(spec networkingv1.NetworkPolicySpec) bool {
	return apiequality.Semantic.DeepEqual(spec, NetworkPolicy(s.Config).Spec)
}

// ErrForeign says an object Paddock relies on is not Paddock's.
var ErrForeign = errors.New("not Paddock's")

// contains says whether got holds everything of want: the same values for
// every key want sets (what the API server adds, defaults, is ignored),
// lists of the same length item by item.
func contains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(g[k], v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if len(w) == 0 {
			return len(g) == 0 // an empty list is stored as none
		}
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	}
	return fmt.Sprint(got) == fmt.Sprint(want)
}

// Run runs one command of c.Session in its sandbox: the sandbox claimed
// (first command) or resumed (after idling), the host's copy pushed, the
// command run once, and what it changed pulled back into the host's copy.
func (s *Sandboxes) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultTimeout
	}
	if c.Egress != "" && s.Gateway == nil {
		return sandbox.Result{}, errors.New("the command is allowed network, but this server serves sandbox pods no egress gateway")
	}
	b, err := s.open(ctx, c.Place, timeout)
	if err != nil {
		return sandbox.Result{}, err
	}
	defer b.close(ctx)
	// The run's route opens for the command's time only, not its
	// transfers.
	var route *egress.Route
	end := func() {}
	if c.Egress != "" {
		var r egress.Route
		r, end = s.Gateway.Open(c.Egress)
		route = &r
	}
	res, err := b.ex.Run(ctx, c, route)
	end()
	if err != nil {
		return res, err
	}
	// The command's changes come back even when it failed or timed out,
	// as a bubblewrap command's stay in the copy; the dependency caches
	// only from setup, which fills them.
	return res, b.pull(ctx, c.DepsWritable)
}

// Start starts a long-lived process (a stdio MCP server) in the session's
// sandbox pod, as Bwrap.Start does in a sandbox of its own: the host's
// copy pushed first, the process's input and output streamed over the
// executor's connection, no time limit. Closing its input ends it, and
// what it changed in the copy comes back then.
func (s *Sandboxes) Start(place sandbox.Place, argv []string) (*sandbox.Process, error) {
	ctx := context.Background()
	if len(argv) == 0 {
		return nil, errors.New("sandbox: no command")
	}
	b, err := s.open(ctx, place, sandbox.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	proc, err := b.ex.Start(ctx, executor.StartRequest{Argv: argv, Env: place.Env, Deps: b.deps != nil})
	if err != nil {
		b.close(ctx)
		return nil, err
	}
	b.keepBusy(sandbox.DefaultTimeout)
	return &sandbox.Process{Stdin: &ending{WriteCloser: proc.In, after: func() error {
		defer b.close(ctx)
		return b.pull(ctx, false)
	}}, Stdout: proc.Out}, nil
}

// ending calls after once it is closed, whose error it returns.
type ending struct {
	io.WriteCloser
	after func() error
	once  sync.Once
}

func (e *ending) Close() error {
	err := e.WriteCloser.Close()
	e.once.Do(func() { err = errors.Join(err, e.after()) })
	return err
}

// box is a session's sandbox while one command or process runs in it:
// its executor, and the host's trees it mirrors.
type box struct {
	s       *Sandboxes
	ex      *executor.Client
	session string
	name    string
	root    *os.Root
	deps    *os.Root // nil when the session has no dependency caches
	idle    func()   // stops keepBusy's beat, if it was started
}

// busyBeat is how often a long-lived process's Sandbox is marked busy
// again; a variable for tests.
var busyBeat = time.Minute

// keepBusy marks the Sandbox busy for timeout and idle time from now,
// again each busyBeat until close: a process that lives past a
// command's limit (an MCP server the session keeps) is not reaped. The
// beat stops for good once the Sandbox is gone or suspended, and skips
// while the namespace holds a policy not Paddock's (Install refuses
// commands then; the process ends with its Sandbox's idle time).
func (b *box) keepBusy(timeout time.Duration) {
	stop, done := make(chan struct{}), make(chan struct{})
	b.idle = func() { close(stop); <-done }
	go func() {
		defer close(done)
		tick := time.NewTicker(busyBeat)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			b.s.install.Lock()
			foreign := b.s.installed == nil
			b.s.install.Unlock()
			if foreign {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), busyBeat)
			running, err := b.s.prolong(ctx, b.name, b.s.now().Add(timeout+b.s.Config.defaults().Idle))
			cancel()
			if apierrors.IsNotFound(err) || err == nil && !running {
				return
			}
			if err != nil && b.s.Logger != nil {
				b.s.Logger.Warn("sandbox busy time", "session", b.session, "err", err)
			}
		}
	}()
}

// open brings the session's sandbox up, marked busy for timeout, and
// pushes the host's copy (and the dependency caches, as the host has
// them, so what a command changed there is undone).
func (s *Sandboxes) open(ctx context.Context, place sandbox.Place, timeout time.Duration) (*box, error) {
	if place.Session == "" || place.Workdir == "" {
		return nil, errors.New("a pod sandbox runs a session's commands: the command names no session or working copy")
	}
	ex, name, err := s.executor(ctx, place.Session, timeout)
	if err != nil {
		return nil, err
	}
	b := &box{s: s, ex: ex, session: place.Session, name: name}
	if b.root, err = os.OpenRoot(place.Workdir); err != nil {
		b.close(ctx)
		return nil, err
	}
	if place.Deps != "" {
		if b.deps, err = os.OpenRoot(place.Deps); err != nil {
			b.close(ctx)
			return nil, err
		}
	}
	// The pod's answers are bounded in time as in size: a pod that stalls
	// holds no worker.
	pushCtx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	// An environment's setup has the pod as a new sandbox would, even
	// one the session has used: its layer may serve other sessions.
	if place.DepsWritable {
		if err := ex.Renew(pushCtx); err != nil {
			b.close(ctx)
			return nil, fmt.Errorf("empty the sandbox pod's scratch and build cache for setup: %w", err)
		}
	}
	if _, err := ex.Push(pushCtx, executor.Work, b.root); err != nil {
		b.close(ctx)
		return nil, fmt.Errorf("copy the working copy into the sandbox pod: %w", err)
	}
	if b.deps != nil {
		if _, err := ex.Push(pushCtx, executor.Deps, b.deps); err != nil {
			b.close(ctx)
			return nil, fmt.Errorf("copy the dependency caches into the sandbox pod: %w", err)
		}
	}
	return b, nil
}

// pull takes back what the command changed in the working copy, and in
// the dependency caches too when deps is set (setup), as hostile input.
func (b *box) pull(ctx context.Context, deps bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), transferTimeout)
	defer cancel()
	work, err := b.ex.Pull(ctx, executor.Work, executor.Into{Root: b.root, UID: b.s.Owner, Limit: b.s.Limit})
	if err != nil {
		return fmt.Errorf("take the command's changes back from the sandbox pod (the copy may hold part of them): %w", err)
	}
	if deps && b.deps != nil {
		// Both trees share the session's disk budget.
		left := b.s.Limit
		if left > 0 {
			if left -= work.Bytes; left <= 0 {
				return fmt.Errorf("take the dependency caches back from the sandbox pod: the working copy's changes took the session's disk budget (%d MiB)", b.s.Limit>>20)
			}
		}
		if _, err := b.ex.Pull(ctx, executor.Deps, executor.Into{Root: b.deps, UID: b.s.Owner, Limit: left}); err != nil {
			return fmt.Errorf("take the dependency caches back from the sandbox pod: %w", err)
		}
	}
	return nil
}

// close marks the sandbox idle from now and lets go of the host's trees.
func (b *box) close(ctx context.Context) {
	if b.idle != nil {
		b.idle()
	}
	b.s.rest(context.WithoutCancel(ctx), b.session, b.name)
	if b.root != nil {
		b.root.Close()
	}
	if b.deps != nil {
		b.deps.Close()
	}
}

// executor brings the session's sandbox up, marked busy for the
// command's time limit, and returns its executor's client and the
// Sandbox's name.
func (s *Sandboxes) executor(ctx context.Context, sessionID string, timeout time.Duration) (*executor.Client, string, error) {
	tmpl, err := s.Install(ctx)
	if err != nil {
		return nil, "", err
	}
	claim, err := s.claim(ctx, tmpl.GetName(), sessionID)
	if err != nil {
		return nil, "", err
	}
	wait := s.Ready
	if wait == 0 {
		wait = 5 * time.Minute
	}
	deadline := time.Now().Add(wait)
	var name string
	for name == "" {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return nil, "", err
		}
		name, _, _ = unstructured.NestedString(claim.Object, "status", "sandbox", "name")
		if name == "" {
			if err := pause(ctx, deadline, "agent-sandbox to bind claim "+claim.GetName()+" to a Sandbox (is the agent-sandbox controller installed?)"); err != nil {
				return nil, "", err
			}
		}
	}
	// Busy for the command's time limit and the idle time after it.
	was, err := s.operate(ctx, name, "Running", s.now().Add(timeout+s.Config.defaults().Idle))
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	pin := s.pins[sessionID]
	s.mu.Unlock()
	for {
		ip, err := s.readyIP(ctx, name, tmpl, deadline)
		if err != nil {
			return nil, "", err
		}
		ex := s.client(sessionID, net.JoinHostPort(ip, strconv.Itoa(s.Config.defaults().Port)), pin)
		if pin != "" && was != "Suspended" {
			return ex, name, nil
		}
		// A pod just made or resumed: the status read may still be the
		// last pod's, so the executor is asked until it answers, the
		// Sandbox read again each time (no command was sent yet, so
		// nothing runs twice).
		probe, cancel := context.WithDeadline(ctx, deadline)
		_, err = ex.Manifest(probe, executor.Work)
		cancel()
		var refused *executor.StatusError
		switch {
		case errors.Is(err, executor.ErrKeyChanged):
			return nil, "", keyChanged(sessionID, name, err)
		case errors.As(err, &refused):
			return nil, "", err
		case err != nil:
			if perr := pause(ctx, deadline, "the executor of Sandbox "+name+" to answer ("+err.Error()+")"); perr != nil {
				return nil, "", perr
			}
			continue
		}
		if pin == "" {
			// This node's first contact: the key met must be the one the
			// session keeps, the first any node met.
			// (A client that met another is not used again: see client.)
			met := ex.Pin()
			kept, err := s.Keys.Keep(ctx, sessionID, met)
			if err != nil {
				return nil, "", fmt.Errorf("keep the key of session %s's executor: %w", sessionID, err)
			}
			s.mu.Lock()
			if s.pins == nil {
				s.pins = map[string]string{}
			}
			s.pins[sessionID] = kept
			s.mu.Unlock()
			if kept != met {
				return nil, "", keyChanged(sessionID, name, fmt.Errorf("%w (kept %.16s…, shown %.16s…)", executor.ErrKeyChanged, kept, met))
			}
		}
		return ex, name, nil
	}
}

// keyChanged says that Sandbox name's executor is not the one session
// first met, what may have caused it, and what to do.
func keyChanged(session, name string, err error) error {
	return fmt.Errorf("Sandbox %s of session %s: %w: its pod is not the session's (the pod is not Paddock's, or the session's claim, Sandbox or volume was deleted and made again); nothing was sent to it, and no command of this session runs in a pod again: stop the session and start a new one", name, session, err)
}

// readyIP waits for Sandbox name to be ready, running Paddock's pod
// template, and returns its pod's IP.
func (s *Sandboxes) readyIP(ctx context.Context, name string, tmpl *unstructured.Unstructured, deadline time.Time) (string, error) {
	for {
		sb := object(SandboxKind)
		if err := s.Client.Get(ctx, types.NamespacedName{Namespace: s.Config.Namespace, Name: name}, sb); err != nil {
			return "", err
		}
		// The pod is the template's: restricted, selected by the network
		// policy, on the runtime class, and nothing else.
		if got, _, _ := unstructured.NestedMap(sb.Object, "spec", "podTemplate"); !contains(got, tmpl.Object["spec"].(map[string]any)["podTemplate"]) {
			return "", fmt.Errorf("%w: Sandbox %s/%s does not run Paddock's pod template", ErrForeign, s.Config.Namespace, name)
		}
		if ready(sb) {
			if ips, _, _ := unstructured.NestedStringSlice(sb.Object, "status", "podIPs"); len(ips) > 0 {
				return ips[0], nil
			}
		}
		if err := pause(ctx, deadline, "Sandbox "+name+" to be ready"); err != nil {
			return "", err
		}
	}
}

// client is the session's executor client for addr, made again (no
// connection kept) when the address changed.
func (s *Sandboxes) client(sessionID, addr, pin string) *executor.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.clients[sessionID]
	// A client is reused at the same address, and only if it met the key
	// kept (or none is known yet: its caller checks the key it meets).
	if ex != nil && ex.Addr() == addr && (pin == "" || ex.Pin() == pin) {
		return ex
	}
	if ex != nil {
		ex.Close()
	}
	ex = executor.Dial(addr, s.Cert, pin)
	if s.clients == nil {
		s.clients = map[string]*executor.Client{}
	}
	s.clients[sessionID] = ex
	return ex
}

// claim gets the session's claim, making it the first time.
func (s *Sandboxes) claim(ctx context.Context, pool, sessionID string) (*unstructured.Unstructured, error) {
	want := Claim(s.Config, pool, sessionID)
	got := object(ClaimKind)
	err := s.Client.Get(ctx, client.ObjectKeyFromObject(want), got)
	if apierrors.IsNotFound(err) {
		if err = s.Client.Create(ctx, want); err == nil {
			return want, nil
		}
		if apierrors.IsAlreadyExists(err) {
			err = s.Client.Get(ctx, client.ObjectKeyFromObject(want), got)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the session's SandboxClaim: %w", err)
	}
	if !contains(got.Object, want.Object) {
		return nil, fmt.Errorf("%w: SandboxClaim %s/%s is not the one Paddock makes for session %s (another tenant of the namespace made it?)", ErrForeign, got.GetNamespace(), got.GetName(), sessionID)
	}
	return got, nil
}

// operate sets a Sandbox's operating mode and its idle time, with the
// Sandbox's resource version, so a suspension decided on an older idle
// time never lands.
func (s *Sandboxes) operate(ctx context.Context, name, mode string, idle time.Time) (was string, err error) {
	err = s.update(ctx, name, func(sb *unstructured.Unstructured) (bool, error) {
		was, _, _ = unstructured.NestedString(sb.Object, "spec", "operatingMode")
		setIdleAfter(sb, idle)
		return true, unstructured.SetNestedField(sb.Object, mode, "spec", "operatingMode")
	})
	return was, err
}

// prolong moves a running Sandbox's idle time to idle, and says whether
// it runs: a Sandbox suspended meanwhile (by Reap, by hand) stays so.
func (s *Sandboxes) prolong(ctx context.Context, name string, idle time.Time) (running bool, err error) {
	err = s.update(ctx, name, func(sb *unstructured.Unstructured) (bool, error) {
		mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
		if running = mode == "Running"; running {
			setIdleAfter(sb, idle)
		}
		return running, nil
	})
	return running, err
}

// update reads Sandbox name and writes it back as change left it, if
// change says to, with the resource version read, again on a conflict.
func (s *Sandboxes) update(ctx context.Context, name string, change func(*unstructured.Unstructured) (bool, error)) error {
	for {
		sb := object(SandboxKind)
		if err := s.Client.Get(ctx, types.NamespacedName{Namespace: s.Config.Namespace, Name: name}, sb); err != nil {
			return err
		}
		if write, err := change(sb); !write || err != nil {
			return err
		}
		if err := s.Client.Update(ctx, sb); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// setIdleAfter sets the time a Sandbox is idle from.
func setIdleAfter(sb *unstructured.Unstructured, t time.Time) {
	a := sb.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[IdleAnnotation] = strconv.FormatInt(t.Unix(), 10)
	sb.SetAnnotations(a)
}

// rest marks the session's Sandbox name idle from now.
func (s *Sandboxes) rest(ctx context.Context, sessionID, name string) {
	if _, err := s.operate(ctx, name, "Running", s.now().Add(s.Config.defaults().Idle)); err != nil && s.Logger != nil {
		s.Logger.Warn("sandbox idle time", "session", sessionID, "err", err)
	}
}

// Reap suspends every Paddock sandbox idle past its time: its pod goes,
// its volume stays. It says how many it suspended. It also checks that
// the namespace's network policy is still Paddock's alone, and says so
// when it is not (the next command installs again, or fails saying why).
func (s *Sandboxes) Reap(ctx context.Context) (int, error) {
	// Idle sandboxes are suspended all the same: fewer pods are open.
	foreign := s.alone(ctx)
	if foreign == nil {
		foreign = s.noCNIPolicies(ctx)
	}
	if foreign != nil {
		s.install.Lock()
		s.installed = nil
		s.install.Unlock()
	}
	n, err := s.suspendIdle(ctx)
	return n, errors.Join(foreign, err)
}

// suspendIdle suspends every Paddock sandbox idle past its time.
func (s *Sandboxes) suspendIdle(ctx context.Context) (int, error) {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(ClaimKind.GroupVersion().WithKind("SandboxClaimList"))
	if err := s.Client.List(ctx, &list, client.InNamespace(s.Config.Namespace), client.HasLabels{SessionLabel}); err != nil {
		return 0, err
	}
	var boxes unstructured.UnstructuredList
	boxes.SetGroupVersionKind(SandboxKind.GroupVersion().WithKind("SandboxList"))
	if err := s.Client.List(ctx, &boxes, client.InNamespace(s.Config.Namespace)); err != nil {
		return 0, err
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range boxes.Items {
		byName[boxes.Items[i].GetName()] = &boxes.Items[i]
	}
	n := 0
	for _, claim := range list.Items {
		name, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
		sb := byName[name]
		if sb == nil {
			continue
		}
		mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
		idle := idleAfter(sb)
		if idle.IsZero() {
			idle = sb.GetCreationTimestamp().Add(s.Config.defaults().Idle)
		}
		if mode == "Suspended" || s.now().Before(idle) {
			continue
		}
		// The Update carries the version read: a command that marked the
		// Sandbox busy since makes it fail, and the Sandbox stays up.
		_ = unstructured.SetNestedField(sb.Object, "Suspended", "spec", "operatingMode")
		if err := s.Client.Update(ctx, sb); err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return n, err
			}
			continue
		}
		n++
		if s.Logger != nil {
			s.Logger.Info("sandbox suspended after idling", "sandbox", name, "session", claim.GetLabels()[SessionLabel])
		}
	}
	return n, nil
}

// Reaper runs Reap every interval until ctx ends.
func (s *Sandboxes) Reaper(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Reap(ctx); err != nil && s.Logger != nil && ctx.Err() == nil {
				s.Logger.Warn("suspending idle sandboxes", "err", err)
			}
		}
	}
}

// Release deletes the session's claim, and with it its Sandbox, pod and
// volume. Idempotent.
func (s *Sandboxes) Release(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	if ex := s.clients[sessionID]; ex != nil {
		ex.Close()
		delete(s.clients, sessionID)
	}
	delete(s.pins, sessionID)
	s.mu.Unlock()
	claim := object(ClaimKind)
	claim.SetNamespace(s.Config.Namespace)
	claim.SetName(ClaimName(sessionID))
	err := s.Client.Delete(ctx, claim, client.PropagationPolicy("Background"))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ready(sb *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// pause waits a moment before looking again, or says what was awaited
// once the deadline passed.
func pause(ctx context.Context, deadline time.Time, what string) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("%w: waited for %s", ErrNotReady, what)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(250 * time.Millisecond):
		return nil
	}
}

// object is an empty resource of kind k.
func object(k schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	return u
}

// RuntimeClass picks the cluster's RuntimeClass for sandboxes: one whose
// handler is gVisor's (runsc) first, else Kata Containers'; empty when the
// cluster has neither (the pods then run on the default runtime, still
// under the restricted standard).
func RuntimeClass(ctx context.Context, c client.Client) (string, error) {
	var l nodev1.RuntimeClassList
	if err := c.List(ctx, &l); err != nil {
		return "", fmt.Errorf("list RuntimeClasses: %w", err)
	}
	best, rank := "", 0
	for _, rc := range l.Items {
		r := 0
		switch h := rc.Handler; {
		case h == "runsc" || strings.HasPrefix(h, "runsc-") || strings.Contains(h, "gvisor"):
			r = 2
		case strings.HasPrefix(h, "kata"):
			r = 1
		}
		if r > rank || r == rank && r > 0 && rc.Name < best {
			best, rank = rc.Name, r
		}
	}
	return best, nil
}
