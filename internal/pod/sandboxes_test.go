package pod_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddock-dev/paddock/internal/cli"
	"github.com/paddock-dev/paddock/internal/executor"
	"github.com/paddock-dev/paddock/internal/pod"
	"github.com/paddock-dev/paddock/internal/pod/podtest"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/temporalserver"
)

// TestMain lets this binary be `paddock` for the simulated pods.
func TestMain(m *testing.M) {
	if os.Getenv("PADDOCK_TEST_CHILD") == "cli" {
		os.Exit(cli.Run(context.Background(), os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	os.Exit(m.Run())
}

// apiServer starts a real kube-apiserver with agent-sandbox's CRDs and
// the namespace ns, and an executors' authority: its client, the
// authority's certificate, and a worker certificate of it.
func apiServer(t *testing.T, ns string) (client.Client, []byte, tls.Certificate) {
	t.Helper()
	podtest.Quiet()
	env := &envtest.Environment{BinaryAssetsDirectory: podtest.Assets(t), CRDDirectoryPaths: []string{"testdata/agent-sandbox", "testdata/cni"}, ErrorIfCRDPathMissing: true}
	rc, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(rc, client.Options{Scheme: scheme.Scheme})
	require.NoError(t, err)
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	caPEM, caKey, err := temporalserver.NewAuthority()
	require.NoError(t, err)
	pki, err := temporalserver.Issue(caPEM, caKey, "127.0.0.1")
	require.NoError(t, err)
	return c, caPEM, pki.ClientTLS().Certificates[0]
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// memKeys keeps sessions' executor keys in memory (pod.Keys).
type memKeys struct {
	mu   sync.Mutex
	kept map[string]string
}

func (k *memKeys) Keep(_ context.Context, session, key string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept == nil {
		k.kept = map[string]string{}
	}
	if k.kept[session] == "" {
		k.kept[session] = key
	}
	return k.kept[session], nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSandboxesOnKubernetes runs a session's commands in a Sandbox of
// agent-sandbox's CRDs on a real kube-apiserver, its pod played by the
// executor as a local process of the pod's user: the template, warm pool
// and network policy pass the API server's validation, the first command
// claims a sandbox and pins its key, the command's changes come back and
// .git/config stays the host's, idling suspends the Sandbox (the pod's
// process goes, the volume stays), the next command resumes it with the
// copy intact on the volume (nothing sent again), a run is never started
// twice, and the session's end deletes the claim and the Sandbox.
func TestSandboxesOnKubernetes(t *testing.T) {
	const ns = "paddock-sandboxes"
	c, caPEM, cert := apiServer(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, handler := range map[string]string{"kata-qemu": "kata-qemu", "gvisor": "runsc", "default-runc": "runc"} {
		require.NoError(t, c.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}))
	}
	runtimeClass, err := pod.RuntimeClass(ctx, c)
	require.NoError(t, err)
	require.Equal(t, "gvisor", runtimeClass, "gVisor before Kata, either before the default runtime")
	cluster := podtest.Start(t, c, ns, 65532)
	volumes := cluster.Volumes

	now := &clock{t: time.Now()}
	cfg := pod.Config{Namespace: ns, Image: "registry.example/paddock:test", RuntimeClass: runtimeClass, WarmPool: 2,
		Idle: 10 * time.Minute, CA: caPEM, WorkersNamespace: "paddock"}
	keys := &memKeys{}
	boxes := &pod.Sandboxes{Client: c, Keys: keys, Config: cfg, Cert: cert, Owner: -1, Limit: 1 << 30, Now: now.Now, Ready: time.Minute}

	host := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(host, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, ".git/config"), []byte("[core]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(host, "hello.txt"), []byte("hello\n"), 0o644))
	run := func(id, script string) (string, sandbox.Result, error) {
		var out bytes.Buffer
		res, err := boxes.Run(ctx, sandbox.Command{Place: sandbox.Place{Session: "S-1", Workdir: host}, ID: id, Script: script, Stdout: &out, Stderr: &out, Timeout: time.Minute})
		return out.String(), res, err
	}

	// A process in a session of its own, and one that hops from process
	// to process (each generation starts the next and exits at once),
	// which a sweep of /proc can miss; a directory its owner cannot read;
	// a process of its own session holding the command's output open.
	out, res, err := run("t1/c1", "cat hello.txt; echo made > made.txt; echo '[core] fsmonitor = evil' > .git/config; id -u; setsid sleep 3001 </dev/null >/dev/null 2>&1 &"+
		"\nprintf '%s\\n' '(bash \"$0\" </dev/null >/dev/null 2>&1 &); exit 0' > /tmp/hop-3002.sh; setsid bash /tmp/hop-3002.sh"+
		"\nmkdir -p /tmp/locked/in && chmod 000 /tmp/locked/in /tmp/locked; echo x > $HOME/.npmrc; echo y > /dev/shm/left; mkdir -p $GOCACHE && echo z > $GOCACHE/kept"+
		"\nsetsid sleep 3003 &") // holding the command's output
	require.NoError(t, err, out)
	require.Equal(t, 0, res.ExitCode, out)
	require.Equal(t, "hello\n65532\n", out, "the command ran in the pod, as the pod's user")
	out, _, err = run("t1/c2", "pgrep -f 'sleep 300[13]|hop-300[2]' || echo none; ls -A /tmp /dev/shm; ls -A $HOME; ls $GOCACHE")
	require.NoError(t, err, out)
	require.Equal(t, "none\n/dev/shm:\n\n/tmp:\n.cache\nkept\n", out,
		"nothing a command started outlives it, even in a session of its own or hopping; /tmp, /dev/shm and home are fresh, the build cache kept")
	b, err := os.ReadFile(filepath.Join(host, "made.txt"))
	require.NoError(t, err)
	require.Equal(t, "made\n", string(b), "the command's file came back")
	b, err = os.ReadFile(filepath.Join(host, ".git/config"))
	require.NoError(t, err)
	require.Equal(t, "[core]\n", string(b), "the host's git configuration stays the host's")

	// What Paddock installed passed the API server's validation of
	// agent-sandbox's schemas.
	tmpl, err := pod.Template(cfg)
	require.NoError(t, err)
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(pod.TemplateKind)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: tmpl.GetName()}, got))
	rcName, _, _ := unstructured.NestedString(got.Object, "spec", "podTemplate", "spec", "runtimeClassName")
	require.Equal(t, "gvisor", rcName)
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(pod.WarmPoolKind)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: tmpl.GetName()}, pool))
	replicas, _, _ := unstructured.NestedInt64(pool.Object, "spec", "replicas")
	require.EqualValues(t, 2, replicas)
	var np networkingv1.NetworkPolicy
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "paddock-sandboxes"}, &np))
	require.Len(t, np.Spec.Egress, 1, "egress to the workers' gateway alone")
	require.Equal(t, int32(pod.DefaultEgressPort), np.Spec.Egress[0].Ports[0].Port.IntVal)
	require.Contains(t, np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)

	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(pod.ClaimKind)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.ClaimName("S-1")}, claim))
	require.Len(t, keys.kept["S-1"], 64, "the executor's key is kept")
	name, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
	require.True(t, cluster.Running(name))

	// A command shares the executor's user, so it may signal it: none of
	// its signals ends the executor, the first process of the pod.
	out, _, err = run("t1/c3", "for s in HUP INT QUIT TERM ABRT SEGV BUS USR1 USR2 PIPE ALRM; do kill -$s 1; done; echo sent")
	require.NoError(t, err, out)
	require.Equal(t, "sent\n", out)
	out, _, err = run("t1/c4", "echo alive")
	require.NoError(t, err, out)
	require.Equal(t, "alive\n", out)
	require.Equal(t, 1, cluster.Starts(name), "the same pod, its executor never stopped")

	// Not idle yet: nothing is suspended.
	n, err := boxes.Reap(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	// Idle past its time: suspended, the pod goes, the volume stays.
	now.Add(11 * time.Minute)
	n, err = boxes.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	waitFor(t, "the pod gone", func() bool { return !cluster.Running(name) })
	sb := &unstructured.Unstructured{}
	sb.SetGroupVersionKind(pod.SandboxKind)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sb))
	mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
	require.Equal(t, "Suspended", mode)
	require.FileExists(t, filepath.Join(volumes, name, "work", "made.txt"), "the volume stays")

	// The next command resumes it: the copy on the volume is intact, so
	// nothing is sent again.
	out, res, err = run("t2/c1", "cat made.txt; ls")
	require.NoError(t, err, out)
	require.Equal(t, 0, res.ExitCode, out)
	require.Equal(t, "made\nhello.txt\nmade.txt\n", out)
	require.Equal(t, 2, cluster.Starts(name), "the pod started again")
	waitFor(t, "the pod's log", func() bool { return strings.Count(cluster.Log(name), "copy received") == 2 }) // through a pipe
	log := cluster.Log(name)
	require.Contains(t, log, `copy received" tree=work written=3 removed=0 bytes=13`, "first: the .git directory, its config and hello.txt")
	// Then only the host's .git/config (7 bytes), which the first command
	// changed in the pod: hello.txt and made.txt were still on the volume.
	require.Contains(t, log, `copy received" tree=work written=1 removed=0 bytes=7`)

	// A run is started once at most, whoever asks again.
	_, _, err = run("t2/c1", "echo again >> twice.txt")
	var refused *executor.StatusError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, 409, refused.Code)
	require.NoFileExists(t, filepath.Join(host, "twice.txt"))

	// A long-lived process (an MCP server) keeps its Sandbox busy past a
	// command's limit; the Sandbox rests from the moment it ends.
	*pod.BusyBeat = 50 * time.Millisecond
	idleAfter := func() string {
		sb := &unstructured.Unstructured{}
		sb.SetGroupVersionKind(pod.SandboxKind)
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sb))
		return sb.GetAnnotations()[pod.IdleAnnotation]
	}
	proc, err := boxes.Start(sandbox.Place{Session: "S-1", Workdir: host}, []string{"cat"})
	require.NoError(t, err)
	now.Add(time.Hour)
	busy := strconv.FormatInt(now.Now().Add(sandbox.DefaultTimeout+cfg.Idle).Unix(), 10)
	waitFor(t, "the Sandbox marked busy again", func() bool { return idleAfter() == busy })
	_, err = proc.Stdin.Write([]byte("ping\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(proc.Stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", line)
	require.NoError(t, proc.Stdin.Close())
	require.Equal(t, strconv.FormatInt(now.Now().Add(cfg.Idle).Unix(), 10), idleAfter(), "rests once the process ends")

	// Setup's two trees share the session's disk budget: 600 bytes in
	// each pass a budget of 1000 bytes alone, not together.
	deps := t.TempDir()
	boxes.Limit = 1000
	var setupOut bytes.Buffer
	_, err = boxes.Run(ctx, sandbox.Command{Place: sandbox.Place{Session: "S-1", Workdir: host, Deps: deps, DepsWritable: true}, ID: "t3/setup", Timeout: time.Minute,
		Stdout: &setupOut, Stderr: &setupOut, Script: `head -c 600 /dev/zero > w.bin; mkdir -p "$GOMODCACHE" && head -c 600 /dev/zero > "$GOMODCACHE/d.bin"`})
	require.ErrorContains(t, err, "disk budget", setupOut.String())
	require.FileExists(t, filepath.Join(host, "w.bin"))
	require.NoFileExists(t, filepath.Join(deps, "go/mod/d.bin"))
	boxes.Limit = 1 << 30

	// The session's end deletes the claim, and with it the Sandbox.
	require.NoError(t, boxes.Release(ctx, "S-1"))
	waitFor(t, "the Sandbox deleted", func() bool {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sb)
		return err != nil && !cluster.Running(name)
	})
	require.NoError(t, boxes.Release(ctx, "S-1"), "idempotent")
}
