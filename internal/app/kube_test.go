package app_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddock-dev/paddock/internal/app"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/kube"
	"github.com/paddock-dev/paddock/internal/pod/podtest"
	"github.com/paddock-dev/paddock/internal/session"
)

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
	assets := podtest.Assets(t)
	ctx := context.Background()
	crds, err := kube.CRDs()
	require.NoError(t, err)
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, ErrorIfCRDPathMissing: true}
	_, err = env.Start()
	require.NoError(t, err)
	defer func() { _ = env.Stop() }()
	kubeconfig := func(name string, groups ...string) string {
		u, err := env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
		require.NoError(t, err)
		data, err := u.KubeConfig()
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), name+".kubeconfig")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	admin := kubeconfig("platform", "system:masters")
	kubectl := func(cfg, stdin string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", cfg}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// The deployment manifests, validated by the API server as they are
	// applied: the CRDs (unchanged), three nodes, the controller's RBAC.
	out, err := kubectl(admin, "", "apply", "-k", "../../deploy/kubernetes")
	require.NoError(t, err, out)
	require.Contains(t, out, "deployment.apps/paddock created")
	require.Contains(t, out, "poddisruptionbudget.policy/paddock created")
	// The controller runs as the manifests' service account, with only
	// what rbac.yaml gives it, its Lease in its own namespace.
	controller := kubeconfig("system:serviceaccount:paddock:paddock", "system:serviceaccounts", "system:serviceaccounts:paddock")
	out, err = kubectl(admin, "", "config", "set-context", "--current", "--namespace=paddock", "--kubeconfig="+controller)
	require.NoError(t, err, out)

	dir := dataDir(t)
	model := scriptIn(t, dir, "restore.yaml") // its first turn writes one file
	a, err := app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "kube-admin", LogLevel: slog.LevelWarn, Kubeconfig: controller,
		Unenforced: map[string]bool{"disk": true, "cpu": true}},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()

	out, err = kubectl(admin, "", "create", "namespace", "team-a")
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
	_, err = client.New(a.URL).WithToken(readToken(dir)).SetPolicy(ctx, "team-a", []byte("default: allow\n")) // its file write runs unasked
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

	// A status naming another project's session (written by someone who
	// may write statuses) is not acted on: the controller puts its own
	// session back, and the other is never stopped.
	pc := client.New(a.URL).WithToken(readToken(dir))
	other, err := pc.CreateSession(ctx, engine.CreateRequest{Model: scriptIn(t, dir, "empty.yaml"), Message: "elsewhere"})
	require.NoError(t, err)
	out, err = kubectl(admin, "", "patch", "session", "first", "-n", "team-a", "--subresource=status", "--type=merge", "-p", `{"status":{"sessionID":"`+other.ID+`"}}`)
	require.NoError(t, err, out)
	waitFor(t, "its own session back in the status", func() (bool, error) {
		out, err := kubectl(admin, "", "get", "session", "first", "-n", "team-a", "-o", "jsonpath={.status.sessionID}")
		return out == id, err
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
