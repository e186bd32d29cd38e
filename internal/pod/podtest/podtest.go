// Package podtest plays, for tests on an API server without nodes,
// agent-sandbox's controller and the kubelet: a SandboxClaim is bound to a
// Sandbox made from its warm pool's template, and a running Sandbox's pod
// is its container's command run as a local process, as the pod's user,
// in a bubblewrap sandbox as a pod has it (the first process of a PID
// namespace of its own, a read-only root, the container's mounts), on a
// loopback address of its own (its pod IP), with the pod's volume a local
// directory that outlives suspension (and each emptyDir one that does
// not).
package podtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/paddock-dev/paddock/internal/pod"
)

// Cluster is the simulated controller and kubelet.
type Cluster struct {
	Client    client.Client
	Namespace string
	// Volumes holds each Sandbox's volume, a directory by its name.
	Volumes string
	// Paddock makes the command running `paddock ARGS` (a test binary
	// acting as it).
	Paddock func(args ...string) *exec.Cmd
	// UID, when set, runs the pods as this user instead of the pod's:
	// tests running at once need users of their own, since an executor
	// kills every other process of its user after each command.
	UID    int
	mu     sync.Mutex
	procs  map[string]*exec.Cmd
	logs   map[string]*buffer
	ips    map[string]string
	starts map[string]int
	stale  map[string]bool // suspended, status not yet saying so
}

// Starts counts a Sandbox's pod starts.
func (c *Cluster) Starts(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts[name]
}

// ip is a Sandbox's pod IP: a loopback address of its own, which its
// executor listens on at the port of its container's command (c.mu held).
func (c *Cluster) ip(name string) string {
	if c.ips == nil {
		c.ips = map[string]string{}
	}
	if ip, ok := c.ips[name]; ok {
		return ip
	}
	n := len(c.ips) + 1
	ip := fmt.Sprintf("127.10.%d.%d", n/250, n%250+1)
	c.ips[name] = ip
	return ip
}

type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Log is what the pods of a Sandbox printed.
func (c *Cluster) Log(sandbox string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.logs[sandbox]; l != nil {
		return l.String()
	}
	return ""
}

// Running says whether a Sandbox's pod runs.
func (c *Cluster) Running(sandbox string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[sandbox] != nil
}

// Run reconciles until ctx ends, then stops every pod.
func (c *Cluster) Run(ctx context.Context) {
	defer func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for name := range c.procs {
			c.kill(name)
		}
	}()
	for ctx.Err() == nil {
		if err := c.step(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "podtest:", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func object(k schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	return u
}

func list(ctx context.Context, c client.Client, k schema.GroupVersionKind, ns string) ([]unstructured.Unstructured, error) {
	var l unstructured.UnstructuredList
	l.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
	err := c.List(ctx, &l, client.InNamespace(ns))
	return l.Items, err
}

func (c *Cluster) step(ctx context.Context) error {
	if c.stale == nil {
		c.stale = map[string]bool{}
	}
	claims, err := list(ctx, c.Client, pod.ClaimKind, c.Namespace)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for i := range claims {
		claim := &claims[i]
		name, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
		if name == "" {
			if name, err = c.bind(ctx, claim); err != nil {
				return err
			}
		}
		live[name] = true
	}
	sandboxes, err := list(ctx, c.Client, pod.SandboxKind, c.Namespace)
	if err != nil {
		return err
	}
	for i := range sandboxes {
		sb := &sandboxes[i]
		name := sb.GetName()
		if !live[name] {
			// Its claim went: so do its pod, its volume and itself.
			c.mu.Lock()
			c.kill(name)
			c.mu.Unlock()
			_ = os.RemoveAll(filepath.Join(c.Volumes, name))
			_ = os.RemoveAll(filepath.Join(c.Volumes, name+".pod"))
			if err := c.Client.Delete(ctx, sb); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
		c.mu.Lock()
		running := c.procs[name] != nil
		c.mu.Unlock()
		switch {
		case mode != "Suspended" && !running:
			if err := c.start(sb); err != nil {
				return err
			}
			if err := c.status(ctx, sb, true); err != nil {
				return err
			}
			delete(c.stale, name)
		case mode == "Suspended" && running:
			// The pod goes now; its status says so a step later, as a
			// real controller's lags: meanwhile it still reads ready.
			c.mu.Lock()
			c.kill(name)
			c.mu.Unlock()
			c.stale[name] = true
		case mode == "Suspended" && c.stale[name]:
			if err := c.status(ctx, sb, false); err != nil {
				return err
			}
			delete(c.stale, name)
		}
	}
	return nil
}

// bind makes the claim's Sandbox from its warm pool's template.
func (c *Cluster) bind(ctx context.Context, claim *unstructured.Unstructured) (string, error) {
	poolName, _, _ := unstructured.NestedString(claim.Object, "spec", "warmPoolRef", "name")
	pool := object(pod.WarmPoolKind)
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: poolName}, pool); err != nil {
		return "", err
	}
	tmplName, _, _ := unstructured.NestedString(pool.Object, "spec", "sandboxTemplateRef", "name")
	tmpl := object(pod.TemplateKind)
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: tmplName}, tmpl); err != nil {
		return "", err
	}
	podTemplate, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "podTemplate")
	volumes, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "volumeClaimTemplates")
	sb := object(pod.SandboxKind)
	sb.SetNamespace(c.Namespace)
	sb.SetName(claim.GetName())
	sb.Object["spec"] = map[string]any{"podTemplate": podTemplate, "volumeClaimTemplates": volumes, "operatingMode": "Running"}
	if err := c.Client.Create(ctx, sb); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	_ = unstructured.SetNestedField(claim.Object, map[string]any{"name": sb.GetName()}, "status", "sandbox")
	return sb.GetName(), c.Client.Status().Update(ctx, claim)
}

// start runs the Sandbox's container command as its pod would: as the
// pod's user, its volume a directory, listening on the test's port.
func (c *Cluster) start(sb *unstructured.Unstructured) error {
	raw, _, _ := unstructured.NestedMap(sb.Object, "spec", "podTemplate", "spec")
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return err
	}
	ctr := spec.Containers[0]
	vol := filepath.Join(c.Volumes, sb.GetName())
	uid := int(*spec.SecurityContext.RunAsUser)
	if c.UID != 0 {
		uid = c.UID
	}
	if err := os.MkdirAll(vol, 0o755); err != nil {
		return err
	}
	if err := os.Chown(vol, uid, uid); err != nil {
		return err
	}
	if ctr.Command[0] != "paddock" {
		return fmt.Errorf("the pod runs %q, not paddock", ctr.Command[0])
	}
	// The pod is a bubblewrap sandbox: a PID namespace whose first process
	// is the executor, a read-only root of the host's system directories,
	// and each mount of the container a local directory: the claim's
	// volume (and its subpaths) the Sandbox's, an emptyDir one (and
	// /dev/shm) made empty at each start. The network is the host's, the
	// pod's IP a loopback address.
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("podtest runs pods with bubblewrap: %w", err)
	}
	empty := map[string]bool{}
	for _, v := range spec.Volumes {
		empty[v.Name] = v.EmptyDir != nil
	}
	own := filepath.Join(c.Volumes, sb.GetName()+".pod")
	if err := os.RemoveAll(own); err != nil {
		return err
	}
	fresh := func(dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.Chown(dir, uid, uid)
	}
	paddock := c.Paddock()
	wrap := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--as-pid-1", "--die-with-parent",
		"--tmpfs", "/", "--dev", "/dev", "--proc", "/proc"}
	for _, d := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		switch fi, err := os.Lstat(d); {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			wrap = append(wrap, "--symlink", target, d)
		default:
			wrap = append(wrap, "--ro-bind", d, d)
		}
	}
	wrap = append(wrap, "--ro-bind", filepath.Dir(paddock.Path), filepath.Dir(paddock.Path))
	mounts := slices.Clone(ctr.VolumeMounts)
	slices.SortFunc(mounts, func(a, b corev1.VolumeMount) int { return len(a.MountPath) - len(b.MountPath) })
	for _, m := range mounts {
		dir := filepath.Join(vol, m.SubPath)
		if empty[m.Name] {
			dir = filepath.Join(own, m.Name, m.SubPath)
		}
		if err := fresh(dir); err != nil {
			return err
		}
		wrap = append(wrap, "--bind", dir, m.MountPath)
	}
	shm := filepath.Join(own, "shm")
	if err := fresh(shm); err != nil {
		return err
	}
	wrap = append(wrap, "--bind", shm, "/dev/shm", "--remount-ro", "/", "--chdir", "/", "--", paddock.Path)
	c.mu.Lock()
	ip := c.ip(sb.GetName())
	c.mu.Unlock()
	for _, a := range ctr.Command[1:] {
		if strings.HasPrefix(a, ":") {
			a = ip + a
		}
		wrap = append(wrap, a)
	}
	cmd := exec.Command(bwrap, wrap...)
	cmd.Env = paddock.Env
	for _, e := range ctr.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}, Setpgid: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logs == nil {
		c.logs, c.procs, c.starts = map[string]*buffer{}, map[string]*exec.Cmd{}, map[string]int{}
	}
	if c.logs[sb.GetName()] == nil {
		c.logs[sb.GetName()] = &buffer{}
	}
	cmd.Stdout, cmd.Stderr = c.logs[sb.GetName()], c.logs[sb.GetName()]
	if err := cmd.Start(); err != nil {
		return err
	}
	c.procs[sb.GetName()] = cmd
	c.starts[sb.GetName()]++
	// Ready once the executor listens (the pod's readiness probe).
	for i := 0; i < 600 && !strings.Contains(c.logs[sb.GetName()].String(), "executor serving"); i++ {
		c.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		c.mu.Lock()
	}
	return nil
}

// kill ends a pod's process group (c.mu held).
func (c *Cluster) kill(name string) {
	if cmd := c.procs[name]; cmd != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		delete(c.procs, name)
	}
}

// status reports a Sandbox ready at its IP, or suspended.
func (c *Cluster) status(ctx context.Context, sb *unstructured.Unstructured, up bool) error {
	now := metav1.Now().UTC().Format(time.RFC3339)
	cond := func(t string, ok bool, reason string) map[string]any {
		s := "False"
		if ok {
			s = "True"
		}
		return map[string]any{"type": t, "status": s, "reason": reason, "message": "", "lastTransitionTime": now}
	}
	st := map[string]any{"conditions": []any{cond("Ready", up, "DependenciesReady"), cond("Suspended", !up, "PodTerminated")}}
	if up {
		c.mu.Lock()
		st["podIPs"] = []any{c.ip(sb.GetName())}
		c.mu.Unlock()
	}
	for {
		cur := object(pod.SandboxKind)
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sb), cur); err != nil {
			return err
		}
		cur.Object["status"] = st
		err := c.Client.Status().Update(ctx, cur)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// Assets is where a real kube-apiserver, etcd and kubectl are (built by
// .ci/run from test/k8s); the test is skipped, saying how to build them,
// when they are missing.
func Assets(t testing.TB) string {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = "/var/cache/paddock-k8s/v1.37.2"
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		t.Skipf("no kube-apiserver in %s: build one with test/k8s/build.sh %s (.ci/run does)", dir, dir)
	}
	return dir
}

// Logs is what every pod printed, by Sandbox.
func (c *Cluster) Logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for name, l := range c.logs {
		fmt.Fprintf(&b, "== pod of %s\n%s\n", name, l.String())
	}
	return b.String()
}

// Paddock copies the running test binary where any user can run it, and
// returns how to run it as `paddock ARGS` (its TestMain runs the CLI when
// PADDOCK_TEST_CHILD=cli).
func Paddock(t testing.TB) func(args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "paddock-bin-") // not under the pods' own /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "paddock")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PADDOCK_TEST_CHILD=cli", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		return cmd
	}
}

// Start runs a Cluster in namespace ns (its volumes in a directory of
// their own, its pods as uid) until the test ends, printing the pods' logs
// when it failed.
func Start(t testing.TB, c client.Client, ns string, uid int) *Cluster {
	t.Helper()
	volumes, err := os.MkdirTemp("/var/tmp", "paddock-volumes-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(volumes, 0o711); err != nil {
		t.Fatal(err)
	}
	cluster := &Cluster{Client: c, Namespace: ns, Volumes: volumes, Paddock: Paddock(t), UID: uid}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); cluster.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Log(cluster.Logs())
		}
		os.RemoveAll(volumes)
	})
	return cluster
}

// Quiet gives controller-runtime (envtest) a logger of warnings before it
// logs, so it does not complain, with a stack, that it has none.
func Quiet() {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}
