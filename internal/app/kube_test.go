package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge/forgetest"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/kube"
	"github.com/paddock-dev/paddock/internal/pod"
	"github.com/paddock-dev/paddock/internal/pod/podtest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// kubeEnv is a real kube-apiserver with Paddock's CRDs and
// agent-sandbox's, the deployment manifests applied, and kubeconfigs of
// a cluster administrator and of the nodes' service account (with only
// the manifests' RBAC).
type kubeEnv struct {
	env               *envtest.Environment
	assets            string
	admin, controller string
}

func startKube(t *testing.T) *kubeEnv {
	t.Helper()
	k := &kubeEnv{assets: podtest.Assets(t)}
	start := time.Now()
	podtest.Quiet()
	crds, err := kube.CRDs()
	require.NoError(t, err)
	k.env = &envtest.Environment{BinaryAssetsDirectory: k.assets, CRDs: crds, CRDDirectoryPaths: []string{"../pod/testdata/agent-sandbox", "../pod/testdata/cni"}, ErrorIfCRDPathMissing: true}
	_, err = k.env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.env.Stop() })
	k.admin = k.kubeconfig(t, "platform", "system:masters")
	// The deployment manifests, validated by the API server as they are
	// applied: the CRDs (unchanged), three nodes, the nodes' RBAC.
	out, err := k.kubectl(k.admin, "", "apply", "-k", "../../deploy/kubernetes")
	require.NoError(t, err, out)
	require.Contains(t, out, "deployment.apps/paddock created")
	require.Contains(t, out, "poddisruptionbudget.policy/paddock created")
	require.Contains(t, out, "networkpolicy.networking.k8s.io/paddock-nodes created")
	// The CRDs are served, and the admission policies take effect, a
	// moment after they are made.
	waitFor(t, "the requester stamped", func() (bool, error) {
		out, err := k.kubectl(k.admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: probe, namespace: paddock}\nspec: {agent: none}\n",
			"create", "--dry-run=server", "-f", "-", "-o", `jsonpath={.metadata.annotations.paddock\.dev/requester}`)
		if err != nil && time.Since(start) < 2*time.Minute {
			return false, nil // not yet served, or refused by the validating policy before the mutating one is in effect
		}
		if err != nil {
			err = fmt.Errorf("%w: %s", err, out)
		}
		return out == "platform", err
	})
	// The nodes run as the manifests' service account, with only what
	// rbac.yaml gives it, the controller's Lease in its own namespace.
	k.controller = k.kubeconfig(t, "system:serviceaccount:paddock:paddock", "system:serviceaccounts", "system:serviceaccounts:paddock")
	out, err = k.kubectl(k.admin, "", "config", "set-context", "--current", "--namespace=paddock", "--kubeconfig="+k.controller)
	require.NoError(t, err, out)
	return k
}

func (k *kubeEnv) kubeconfig(t *testing.T, name string, groups ...string) string {
	t.Helper()
	u, err := k.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	require.NoError(t, err)
	data, err := u.KubeConfig()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

func (k *kubeEnv) kubectl(cfg, stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(k.assets, "kubectl"), append([]string{"--kubeconfig", cfg}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubernetesResources runs Paddock's controller against a real
// kube-apiserver: an Agent and a Session applied with kubectl become an
// agent and a running session in the namespace's project, the session's
// state is mirrored into the resource's status, invalid resources are
// refused by the schema with the field's path, a user without a role in
// a namespace cannot read its sessions, and deleting a Session stops the
// session and lets the resource go only once its audit log is sealed. The
// deployment manifests (kubectl apply -k deploy/kubernetes) are applied
// first, and the controller runs with only the RBAC they give it.
func TestKubernetesResources(t *testing.T) {
	ownCluster(t)
	ctx := context.Background()
	k := startKube(t)
	kubectl, admin, controller := k.kubectl, k.admin, k.controller
	kubeconfig := func(name string, groups ...string) string { return k.kubeconfig(t, name, groups...) }

	dir := dataDir(t)
	model := scriptIn(t, dir, "restore.yaml") // its first turn writes one file
	a, err := app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "platform", LogLevel: slog.LevelWarn, Kubeconfig: controller,
		Unenforced: map[string]bool{"disk": true, "cpu": true}, KubeUsers: map[string]string{"system:serviceaccount:team-a:ci": "carol"}},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()

	out, err := kubectl(admin, "", "create", "namespace", "team-a")
	require.NoError(t, err, out)
	out, err = kubectl(admin, `apiVersion: paddock.dev/v1alpha1
kind: Agent
metadata: {name: fixer, namespace: team-a}
spec:
  model: `+model+`
  tools: [read_file, write_file]
  session: {idleTimeout: 15m}
`, "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the agent applied", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "agent", "fixer", "-n", "team-a", "-o", "jsonpath={.status.conditions[0].status}")
		return out == "True", err
	})
	_, err = a.Service.Store.GetAgent(ctx, "team-a", "fixer")
	require.NoError(t, err, "the agent is in the namespace's project")
	_, err = client.New(a.URL).WithToken(readToken(dir)).Projects().SetPolicy(ctx, "team-a", []byte("default: allow\n")) // its file write runs unasked
	require.NoError(t, err)

	// Invalid resources are refused by the schema, with the field's path.
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: bad, namespace: team-a}\nspec: {model: "+model+", concurrency: -1}\n", "apply", "-f", "-")
	require.Error(t, err)
	require.Contains(t, out, "spec.concurrency")
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: bad, namespace: team-a}\nspec: {modle: x}\n", "apply", "-f", "-")
	require.Error(t, err)
	require.Contains(t, out, `unknown field "spec.modle"`)
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: bad, namespace: team-a}\nspec: {tools: [read_file]}\n", "apply", "-f", "-")
	require.Error(t, err)
	require.Contains(t, out, "spec.model: Required value")
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: bad, namespace: team-a}\nspec: {agent: fixer, colour: red}\n", "apply", "-f", "-")
	require.Error(t, err)
	require.Contains(t, out, `unknown field "spec.colour"`)

	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: first, namespace: team-a}\nspec: {agent: fixer, message: hello}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	var id string
	waitFor(t, "the session's status mirrored", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "first", "-n", "team-a", "-o", "jsonpath={.status.sessionID} {.status.status}")
		f := strings.Fields(out)
		if len(f) == 2 && f[1] == string(session.StatusAwaiting) {
			id = f[0]
			return true, nil
		}
		return false, err
	})
	x, err := a.Service.Store.GetSession(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "team-a", x.Project)
	require.Equal(t, "fixer", x.Agent)
	require.Contains(t, x.CreatedBy.Via, "kubernetes:Session/team-a/first", "the session says it came through Kubernetes")
	waitFor(t, "the session's budget use and changes mirrored", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "first", "-n", "team-a", "-o", "jsonpath={.status.budget.actions}/{.status.budget.turns}/{.status.diffSummary}")
		return out == "1/1/1 file(s) changed (step 1)", err
	})
	out, err = kubectl(admin, "", "get", "sessions", "-n", "team-a")
	require.NoError(t, err, out)
	require.Contains(t, out, "awaiting")
	require.Contains(t, out, "fixer")
	require.Contains(t, out, "1 file(s) changed")

	// RBAC: a user with a role in team-b only reads no session of team-a.
	bob := kubeconfig("bob")
	out, err = kubectl(admin, "", "create", "namespace", "team-b")
	require.NoError(t, err, out)
	out, err = kubectl(admin, "", "create", "role", "sessions", "-n", "team-b", "--verb=get,list,watch", "--resource=sessions.paddock.dev")
	require.NoError(t, err, out)
	out, err = kubectl(admin, "", "create", "rolebinding", "bob-sessions", "-n", "team-b", "--role=sessions", "--user=bob")
	require.NoError(t, err, out)
	out, err = kubectl(bob, "", "get", "sessions", "-n", "team-b")
	require.NoError(t, err, out)
	out, err = kubectl(bob, "", "get", "sessions", "-n", "team-a")
	require.Error(t, err)
	require.Contains(t, out, "forbidden")

	// Who asked is who acts. The API server stamps each resource with the
	// Kubernetes user who made it (an author's own value is overwritten),
	// and Paddock acts for the Paddock user of that name, with that user's
	// roles: Kubernetes RBAC alone lets no one into a project.
	carol := kubeconfig("carol")
	out, err = kubectl(admin, "", "create", "role", "paddock-author", "-n", "team-a", "--verb=get,list,watch,create,update,patch", "--resource=sessions.paddock.dev,agents.paddock.dev")
	require.NoError(t, err, out)
	out, err = kubectl(admin, "", "create", "rolebinding", "carol-author", "-n", "team-a", "--role=paddock-author", "--user=carol")
	require.NoError(t, err, out)
	out, err = kubectl(carol, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: carols, namespace: team-a, annotations: {paddock.dev/requester: platform}}\nspec: {agent: fixer, message: hi}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	out, err = kubectl(admin, "", "get", "session", "carols", "-n", "team-a", "-o", `jsonpath={.metadata.annotations.paddock\.dev/requester}`)
	require.NoError(t, err, out)
	require.Equal(t, "carol", out, "the requester is who asked, not who the author wrote")
	waitFor(t, "carol's session refused: no Paddock user", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "carols", "-n", "team-a", "-o", "jsonpath={.status.conditions[0].status} {.status.conditions[0].message}")
		return strings.HasPrefix(out, "False ") && strings.Contains(out, "carol is not a Paddock user"), err
	})
	out, err = kubectl(carol, "", "annotate", "session", "carols", "-n", "team-a", "--overwrite", "paddock.dev/requester=platform")
	require.Error(t, err, "a session's requester never changes")
	require.Contains(t, out, "must be unchanged")
	pc := client.New(a.URL).WithToken(readToken(dir))
	_, err = pc.Access().CreateUser(ctx, "carol", false)
	require.NoError(t, err)
	require.NoError(t, pc.Access().SetMember(ctx, "team-a", "carol", identity.Member))
	out, err = kubectl(carol, "", "annotate", "session", "carols", "-n", "team-a", "poke=1") // reconcile now, not in a minute
	require.NoError(t, err, out)
	var carols string
	waitFor(t, "carol's session started as carol", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "carols", "-n", "team-a", "-o", "jsonpath={.status.sessionID}")
		carols = out
		return out != "", err
	})
	cx, err := a.Service.Store.GetSession(ctx, carols)
	require.NoError(t, err)
	require.Equal(t, "carol", cx.CreatedBy.ID)
	require.Equal(t, "kubernetes:Session/team-a/carols", cx.CreatedBy.Via)
	// A service account acts for the Paddock user the operator mapped it
	// to, and only so.
	ci := kubeconfig("system:serviceaccount:team-a:ci")
	out, err = kubectl(admin, "", "create", "rolebinding", "ci-author", "-n", "team-a", "--role=paddock-author", "--serviceaccount=team-a:ci")
	require.NoError(t, err, out)
	out, err = kubectl(ci, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: from-ci, namespace: team-a}\nspec: {agent: fixer, message: hi}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	var fromCI string
	waitFor(t, "the service account's session started as carol", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "from-ci", "-n", "team-a", "-o", "jsonpath={.status.sessionID}")
		fromCI = out
		return out != "", err
	})
	cix, err := a.Service.Store.GetSession(ctx, fromCI)
	require.NoError(t, err)
	require.Equal(t, "carol", cix.CreatedBy.ID)
	require.Equal(t, "kubernetes:Session/team-a/from-ci", cix.CreatedBy.Via)
	// A member may start sessions, not change agents.
	out, err = kubectl(carol, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: carolsagent, namespace: team-a}\nspec: {model: "+model+"}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "carol's agent refused by her Paddock role", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "agent", "carolsagent", "-n", "team-a", "-o", "jsonpath={.status.conditions[0].status} {.status.conditions[0].message}")
		return strings.HasPrefix(out, "False ") && strings.Contains(out, "carol is member in project team-a"), err
	})
	_, err = a.Service.Store.GetAgent(ctx, "team-a", "carolsagent")
	require.ErrorIs(t, err, errdefs.ErrNotFound)

	// A status naming another project's session (written by someone who
	// may write statuses) is not acted on: the controller puts its own
	// session back, and the other is never stopped.
	other, err := pc.Sessions().Create(ctx, wire.CreateRequest{Model: scriptIn(t, dir, "empty.yaml"), Message: "elsewhere"})
	require.NoError(t, err)
	out, err = kubectl(admin, "", "patch", "session", "first", "-n", "team-a", "--subresource=status", "--type=merge", "-p", `{"status":{"sessionID":"`+other.ID+`"}}`)
	require.NoError(t, err, out)
	waitFor(t, "its own session back in the status", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "first", "-n", "team-a", "-o", "jsonpath={.status.sessionID}")
		return out == id, err
	})

	// A Session whose finalizer someone removed by hand goes at once; its
	// session does not run on without it: the sweeper stops it.
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: orphan, namespace: team-a}\nspec: {agent: fixer, message: hello}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	var orphan string
	waitFor(t, "the orphan-to-be started", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "orphan", "-n", "team-a", "-o", "jsonpath={.status.sessionID}")
		orphan = out
		return out != "", err
	})
	out, err = kubectl(admin, "", "patch", "session", "orphan", "-n", "team-a", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	require.NoError(t, err, out)
	out, err = kubectl(admin, "", "delete", "session", "orphan", "-n", "team-a", "--wait=true", "--timeout=60s")
	require.NoError(t, err, out)
	waitFor(t, "the orphaned session stopped by the sweeper", func() (bool, error) {
		x, err := a.Service.Store.GetSession(ctx, orphan)
		return x.Status == session.StatusStopped, err
	})

	// Deleting the resource stops the session; it goes once sealed.
	out, err = kubectl(admin, "", "delete", "session", "first", "-n", "team-a", "--wait=true", "--timeout=120s")
	require.NoError(t, err, out)
	x, err = a.Service.Store.GetSession(ctx, id)
	require.NoError(t, err)
	require.Equal(t, session.StatusStopped, x.Status)
	seal, err := a.Service.Store.AuditSeal(ctx, id)
	require.NoError(t, err)
	require.NotNil(t, seal, "the audit log was sealed before the resource went")
	// A session that failed (its setup did) ended unsealed: deleting its
	// resource seals it, and the resource goes.
	out, err = kubectl(admin, `apiVersion: paddock.dev/v1alpha1
kind: Agent
metadata: {name: broken, namespace: team-a}
spec:
  model: `+model+`
  tools: [run_command]
  environment: {setup: "exit 3"}
---
apiVersion: paddock.dev/v1alpha1
kind: Session
metadata: {name: failing, namespace: team-a}
spec: {agent: broken, message: hello}
`, "apply", "-f", "-")
	require.NoError(t, err, out)
	var failed string
	waitFor(t, "the failing session to fail", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "failing", "-n", "team-a", "-o", "jsonpath={.status.sessionID} {.status.status}")
		f := strings.Fields(out)
		if len(f) == 2 && f[1] == string(session.StatusFailed) {
			failed = f[0]
			return true, nil
		}
		return false, err
	})
	out, err = kubectl(admin, "", "delete", "session", "failing", "-n", "team-a", "--wait=true", "--timeout=120s")
	require.NoError(t, err, out)
	seal, err = a.Service.Store.AuditSeal(ctx, failed)
	require.NoError(t, err)
	require.NotNil(t, seal, "the failed session's log was sealed as its resource went")

	o, err := a.Service.Store.GetSession(ctx, other.ID)
	require.NoError(t, err)
	require.NotEqual(t, session.StatusStopped, o.Status, "the other project's session was not stopped")
	lease, err := kubectl(admin, "", "get", "lease", "paddock-controller", "-n", "paddock", "-o", "jsonpath={.spec.holderIdentity}")
	require.NoError(t, err, lease)
	require.NotEmpty(t, lease, "the controller holds its Lease")

	// The Lease is taken from it (as when the API server was out of reach
	// past the renew deadline): the node stands by, takes it back once it
	// lapses, and goes on reconciling.
	out, err = kubectl(admin, "", "patch", "lease", "paddock-controller", "-n", "paddock", "--type=merge", "-p",
		`{"spec":{"holderIdentity":"intruder","renewTime":"`+time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")+`"}}`)
	require.NoError(t, err, out)
	waitFor(t, "the node to take the Lease back once it lapsed", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "lease", "paddock-controller", "-n", "paddock", "-o", "jsonpath={.spec.holderIdentity}")
		return out != "" && out != "intruder", err
	})
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: second, namespace: team-a}\nspec: {agent: fixer, message: again}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the second session started by the controller that came back", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "second", "-n", "team-a", "-o", "jsonpath={.status.sessionID}")
		return out != "", err
	})
}

// TestKubernetesSandboxes runs a session begun with kubectl in a sandbox
// pod: an agent-sandbox Sandbox claimed from the template Paddock
// installed (with only the manifests' RBAC), its pod played by the
// executor as a local process of the pod's user. The command's file comes
// back into the session's copy and the Session's status mirrors it; the
// idle pod is suspended and the next message resumes it with the copy on
// its volume; deleting the Session releases the sandbox.
func TestKubernetesSandboxes(t *testing.T) {
	ownCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := startKube(t)
	const ns = "paddock-sandboxes"

	u, err := k.env.AddUser(envtest.User{Name: "kubelet", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := ctrlclient.New(u.Config(), ctrlclient.Options{Scheme: scheme.Scheme})
	require.NoError(t, err)
	cluster := podtest.Start(t, kc, ns, 65533) // not the pod package's tests' user
	volumes := cluster.Volumes
	defer func() {
		if t.Failed() {
			for _, kind := range []string{"sessions.paddock.dev -n team-a", "sandboxclaims -n " + ns, "sandboxes -n " + ns} {
				out, _ := k.kubectl(k.admin, "", append([]string{"get", "-o", "yaml"}, strings.Fields(kind)...)...)
				t.Log(out)
			}
		}
	}()

	dir := dataDir(t)
	model := scriptIn(t, dir, "pod.yaml")
	a, err := app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "platform", LogLevel: slog.LevelWarn, Kubeconfig: k.controller,
		Execution: config.ExecutionServer, TestingForgeLoopback: true,
		Pods: &config.Pods{Image: "registry.example/paddock-sandbox:test", Namespace: ns, RuntimeClass: "none", WarmPool: 1, Idle: 2 * time.Second, Egress: "127.0.0.1:0"}},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()
	pc := client.New(a.URL).WithToken(readToken(dir))

	out, err := k.kubectl(k.admin, "", "create", "namespace", "team-a")
	require.NoError(t, err, out)
	out, err = k.kubectl(k.admin, `apiVersion: paddock.dev/v1alpha1
kind: Agent
metadata: {name: builder, namespace: team-a}
spec:
  model: `+model+`
  tools: [run_command]
  session: {idleTimeout: 15m}
  environment: {network: {commands: ["allowed.example:443"]}}
`, "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the agent applied", func() (bool, error) {
		out, err := k.kubectl(k.admin, "", "get", "agent", "builder", "-n", "team-a", "-o", "jsonpath={.status.conditions[0].status}")
		return out == "True", err
	})
	_, err = pc.Projects().SetPolicy(ctx, "team-a", []byte("default: allow\ncommands:\n  allow: [echo, id, cat]\n"))
	require.NoError(t, err)
	out, err = k.kubectl(k.admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: build, namespace: team-a}\nspec: {agent: builder, message: make it}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	approve := func(id string) error {
		pending, err := pc.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: id, Status: session.ApprovalPending})
		for _, ap := range pending {
			if err == nil {
				_, err = pc.Gates().Decide(ctx, ap.ID, true, "fine")
			}
		}
		return err
	}
	var id string
	waitFor(t, "the session's first turn done, its change mirrored", func() (bool, error) {
		out, err := k.kubectl(k.admin, "", "get", "session", "build", "-n", "team-a", "-o", "jsonpath={.status.sessionID} {.status.status} {.status.diffSummary}")
		f := strings.Fields(out)
		if len(f) > 0 {
			// The command writes a file: the policy asks, a person approves.
			if err := approve(f[0]); err != nil {
				return false, err
			}
		}
		if len(f) > 2 && f[1] == string(session.StatusAwaiting) && strings.HasPrefix(strings.Join(f[2:], " "), "1 file(s) changed") {
			id = f[0]
			return true, nil
		}
		return false, err
	})
	// results are the commands' results (or errors), in order.
	results := func() []string {
		evs, err := pc.Sessions().Events(ctx, id, 0)
		require.NoError(t, err)
		var out []string
		for _, e := range evs {
			var d session.ToolCallData
			if e.Kind == session.EventToolCall && json.Unmarshal(e.Data, &d) == nil && (d.Result != "" || d.Error != "") {
				out = append(out, d.Result+d.Error)
			}
		}
		return out
	}
	require.Equal(t, []string{"65533\n"}, results(), "the command ran in the pod, as its user")
	x, err := a.Service.Store.GetSession(ctx, id)
	require.NoError(t, err)
	made, err := os.ReadFile(filepath.Join(x.Workdir, "made.txt"))
	require.NoError(t, err)
	require.Equal(t, "made in the pod\n", string(made), "the command's file is in the session's copy")

	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(pod.ClaimKind)
	require.NoError(t, kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.ClaimName(id)}, claim))
	name, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
	kept, err := a.Service.Store.ServerSecret(ctx, "executor-key/"+id, []byte("none yet"))
	require.NoError(t, err)
	require.NotEqual(t, "none yet", string(kept), "the executor's key is kept in the store")
	waitFor(t, "the idle pod suspended", func() (bool, error) { return !cluster.Running(name) && cluster.Starts(name) == 1, nil })
	require.FileExists(t, filepath.Join(volumes, name, "work", "made.txt"), "the volume stays")

	_, err = pc.Sessions().Send(ctx, id, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"read it back"}`)})
	require.NoError(t, err)
	waitFor(t, "the second turn done", func() (bool, error) {
		if err := approve(id); err != nil { // curl asks
			return false, err
		}
		out, err := k.kubectl(k.admin, "", "get", "session", "build", "-n", "team-a", "-o", "jsonpath={.status.status}/{.status.budget.turns}")
		return out == "awaiting/2", err
	})
	got := results()
	require.Len(t, got, 3)
	require.Equal(t, []string{"65533\n", "made in the pod\n"}, got[:2], "the resumed pod read the file the first command made")
	// The pod's network is its run's egress proxy, by the node's gateway:
	// the proxy refused the host the agent does not allow, and said so.
	require.Contains(t, got[2], "network to not-allowed.example is not allowed by this agent's environment")
	evs, err := pc.Sessions().Events(ctx, id, 0)
	require.NoError(t, err)
	refused := 0
	for _, e := range evs {
		var d session.NetworkData
		if e.Kind == session.EventNetwork && json.Unmarshal(e.Data, &d) == nil && !d.Allowed && d.Host == "not-allowed.example" && d.Phase == "command" {
			refused++
		}
	}
	require.Equal(t, 1, refused, "the refusal is in the transcript")
	require.Equal(t, 2, cluster.Starts(name), "the next message resumed the pod")
	waitFor(t, "the pod's log of the three commands", func() (bool, error) { // it arrives through a pipe
		return strings.Count(cluster.Log(name), `msg="command ran"`) == 3, nil
	})

	out, err = k.kubectl(k.admin, "", "delete", "session", "build", "-n", "team-a", "--wait=true", "--timeout=120s")
	require.NoError(t, err, out)
	waitFor(t, "the sandbox released", func() (bool, error) {
		err := kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.ClaimName(id)}, claim)
		return apierrors.IsNotFound(err) && !cluster.Running(name), nil
	})

	// An environment's setup runs in the session's pod too: what it puts
	// in the dependency caches and the working copy comes back into the
	// layer, and the session's command finds both in its pod.
	out, err = k.kubectl(k.admin, `apiVersion: paddock.dev/v1alpha1
kind: Agent
metadata: {name: setup, namespace: team-a}
spec:
  model: `+scriptIn(t, dir, "podsetup.yaml")+`
  tools: [run_command]
  session: {idleTimeout: 15m}
  environment:
    setup: mkdir -p "$GOMODCACHE/example.com" && echo cached > "$GOMODCACHE/example.com/note" && echo built > built.txt
`, "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the setup agent applied", func() (bool, error) {
		out, err := k.kubectl(k.admin, "", "get", "agent", "setup", "-n", "team-a", "-o", "jsonpath={.status.conditions[0].status}")
		return out == "True", err
	})
	out, err = k.kubectl(k.admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: look, namespace: team-a}\nspec: {agent: setup, message: look}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the set-up session's turn done", func() (bool, error) {
		out, err := k.kubectl(k.admin, "", "get", "session", "look", "-n", "team-a", "-o", "jsonpath={.status.sessionID} {.status.status}")
		f := strings.Fields(out)
		if len(f) > 0 {
			id = f[0]
			if err := approve(id); err != nil {
				return false, err
			}
		}
		return len(f) == 2 && f[1] == string(session.StatusAwaiting), err
	})
	require.Equal(t, []string{"cached\nbuilt\n"}, results(), "setup's cache and file, in the pod of the session's command")
	evs, err = pc.Sessions().Events(ctx, id, 0)
	require.NoError(t, err)
	var phases []string
	for _, e := range evs {
		var d session.PhaseData
		if e.Kind == session.EventPhase && json.Unmarshal(e.Data, &d) == nil {
			phases = append(phases, string(d.Phase)+": "+d.Detail+d.Error)
		}
	}
	require.NotEmpty(t, phases)
	require.Regexp(t, `^building_image: setup ran in .*; environment layer \w+ saved \(\d+ files, 13 B\)`, phases[0], "%v", phases)

	// A stdio MCP server runs in the session's pod (this test binary, the
	// pod's `paddock`, as the server), its tools listed and called there.
	out, err = k.kubectl(k.admin, `apiVersion: paddock.dev/v1alpha1
kind: Agent
metadata: {name: calc, namespace: team-a}
spec:
  model: `+scriptIn(t, dir, "mcp.yaml")+`
  tools: [read_file]
  mcpServers:
    - name: calc
      command: [`+cluster.Paddock().Path+`]
      env: {PADDOCK_TEST_CHILD: mcp}
`, "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the calc agent applied", func() (bool, error) {
		out, err := k.kubectl(k.admin, "", "get", "agent", "calc", "-n", "team-a", "-o", "jsonpath={.status.conditions[0].status}")
		return out == "True", err
	})
	out, err = k.kubectl(k.admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: add, namespace: team-a}\nspec: {agent: calc, message: add}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "the calc session's turn done", func() (bool, error) {
		out, err := k.kubectl(k.admin, "", "get", "session", "add", "-n", "team-a", "-o", "jsonpath={.status.sessionID} {.status.status}")
		f := strings.Fields(out)
		if len(f) > 0 {
			id = f[0]
		}
		return len(f) == 2 && f[1] == string(session.StatusAwaiting), err
	})
	final := finalCalls(t, pc, id)
	require.Equal(t, session.CallDone, final["call_0_0"].State, final["call_0_0"].Error)
	require.Equal(t, "42", final["call_0_0"].Result, "the server in the pod added")
	require.NotEqual(t, session.CallDone, final["call_0_1"].State, "a tool the server does not have never runs")
	require.NoError(t, kc.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.ClaimName(id)}, claim))
	name, _, _ = unstructured.NestedString(claim.Object, "status", "sandbox", "name")
	require.Contains(t, cluster.Log(name), `msg="process started"`, "the server ran in the session's pod")

	// A session on a remote repository: this node fetches it in a
	// bubblewrap sandbox of its own (its one way out the forge), and the
	// session's pod gets the copy, never the credential.
	forgeToken := unique("pod-forge-token") // made now: the test binary (the forwarder, in the data directory) holds no copy
	forge := forgetest.New(t, "paddock", forgeToken)
	forge.Repo(t, "team/app", map[string]string{"README.md": "fetched for the pod\n"})
	_, err = pc.Projects().AddConnection(ctx, "team-a", wire.ConnectionRequest{Name: "git", Kind: "git", URL: forge.URL, Repositories: []string{"team/*"}, Credential: forgeToken})
	require.NoError(t, err)
	remote, err := pc.Sessions().Create(ctx, wire.CreateRequest{Project: "team-a", Model: scriptIn(t, dir, "podremote.yaml"), Message: "read it", Repo: "team/app", Ref: "main"})
	require.NoError(t, err)
	require.NotNil(t, remote.Remote)
	id = remote.ID
	waitFor(t, "the remote repository's session's turn done", func() (bool, error) {
		turns, err := pc.Sessions().Turns(ctx, id)
		return len(turns) == 1 && turns[0].Status.Settled(), err
	})
	require.Equal(t, []string{"fetched for the pod\n"}, results(), "the command read the fetched file in the session's pod")
	for _, where := range []string{dir, volumes} {
		found, err := exec.Command("grep", "-rlF", forgeToken, where).CombinedOutput()
		require.Empty(t, strings.TrimSpace(string(found)), "the forge's credential in the clear under %s: %v", where, err)
	}
}
