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
	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/kube"
	"github.com/paddock-dev/paddock/internal/session"
)

// TestKubernetesAttack5 probes the controller as a tenant ("mallory") who
// may do anything with paddock.dev resources in her namespace only:
//   - an Agent in namespace "default" writes Paddock's default project;
//   - a trigger name taken in another project is answered (acting as the
//     server's admin) with that project's agent name;
//   - a Session's repository is an existence oracle of the server's files;
//   - removing the finalizer (plain update) orphans a live session;
//   - a failed session's resource cannot be deleted (never sealed);
//   - once the controller loses its Lease it never runs again.
func TestKubernetesAttack5(t *testing.T) {
	ownCluster(t)
	assets := kubeAssets(t)
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
	get := func(cfg, ns, what, path string) string {
		out, _ := kubectl(cfg, "", "get", what, "-n", ns, "-o", "jsonpath="+path)
		return out
	}
	out, err := kubectl(admin, "", "apply", "-k", "../../deploy/kubernetes")
	require.NoError(t, err, out)
	controller := kubeconfig("system:serviceaccount:paddock:paddock", "system:serviceaccounts", "system:serviceaccounts:paddock")
	out, err = kubectl(admin, "", "config", "set-context", "--current", "--namespace=paddock", "--kubeconfig="+controller)
	require.NoError(t, err, out)

	dir := dataDir(t)
	model := scriptIn(t, dir, "restore.yaml")
	a, err := app.Start(ctx, config.Config{DataDir: dir, Listen: "127.0.0.1:0", AdminUser: "kube-admin", LogLevel: slog.LevelWarn, Kubeconfig: controller},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	defer a.Stop()

	for _, ns := range []string{"team-a", "team-m"} {
		out, err = kubectl(admin, "", "create", "namespace", ns)
		require.NoError(t, err, out)
	}
	// Mallory: everything on paddock.dev resources, in team-m only.
	mallory := kubeconfig("mallory")
	out, err = kubectl(admin, "", "create", "role", "paddock-all", "-n", "team-m", "--verb=*", "--resource=agents.paddock.dev,sessions.paddock.dev,sessions.paddock.dev/status")
	require.NoError(t, err, out)
	out, err = kubectl(admin, "", "create", "rolebinding", "mallory", "-n", "team-m", "--role=paddock-all", "--user=mallory")
	require.NoError(t, err, out)

	applied := func(ns, name string) string {
		var msg string
		waitFor(t, "agent "+ns+"/"+name+" reconciled", func() (bool, error) {
			s := get(admin, ns, "agent/"+name, "{.status.conditions[0].status}")
			msg = get(admin, ns, "agent/"+name, "{.status.conditions[0].message}")
			return s == "True" || s == "False", nil
		})
		return msg
	}

	// 1. Namespace "default" is Paddock's default project.
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: intruder, namespace: default}\nspec: {model: "+model+"}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	applied("default", "intruder")
	_, err = a.Service.Store.GetAgent(ctx, "default", "intruder")
	require.NoError(t, err, "an Agent in namespace default is an agent of Paddock's default project")

	// 2. Trigger names are global; the refusal names the other project's agent.
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: secret-fixer, namespace: team-a}\nspec:\n  model: "+model+"\n  tools: [read_file, write_file]\n  triggers: [{name: hook, message: go}]\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	require.Empty(t, applied("team-a", "secret-fixer"))
	out, err = kubectl(mallory, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: spy, namespace: team-m}\nspec:\n  model: "+model+"\n  triggers: [{name: hook, message: go}]\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	msg := applied("team-m", "spy")
	t.Logf("mallory's Agent status: %s", msg)
	require.Contains(t, msg, "team-a/secret-fixer", "another project's agent is named to mallory")

	out, err = kubectl(mallory, "apiVersion: paddock.dev/v1alpha1\nkind: Agent\nmetadata: {name: worker, namespace: team-m}\nspec:\n  model: "+model+"\n  tools: [read_file, write_file]\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	require.Empty(t, applied("team-m", "worker"))

	// 3. The repository field is an oracle of the server's file system.
	started := func(cfg, ns, name string) string {
		var m string
		waitFor(t, "session "+ns+"/"+name+" reconciled", func() (bool, error) {
			m = get(cfg, ns, "session/"+name, `{.status.conditions[?(@.type=="Started")].message}`)
			return m != "" || get(cfg, ns, "session/"+name, "{.status.sessionID}") != "", nil
		})
		return m
	}
	for name, repo := range map[string]string{"p1": "/etc/passwd", "p2": "/nonexistent-attack5", "p3": "/etc"} {
		out, err = kubectl(mallory, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: "+name+", namespace: team-m}\nspec: {agent: worker, repository: "+repo+"}\n", "apply", "-f", "-")
		require.NoError(t, err, out)
		t.Logf("repository %s: %s", repo, started(mallory, "team-m", name))
	}
	require.Contains(t, started(mallory, "team-m", "p1"), "is not a directory")
	require.Contains(t, started(mallory, "team-m", "p2"), "does not exist")
	require.Contains(t, started(mallory, "team-m", "p3"), "is not a git repository")

	// 4. Removing the finalizer with a plain update orphans the session.
	out, err = kubectl(mallory, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: orphan, namespace: team-m}\nspec: {agent: worker, message: hi}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	var id string
	waitFor(t, "orphan awaiting", func() (bool, error) {
		f := strings.Fields(get(mallory, "team-m", "session/orphan", "{.status.sessionID} {.status.status}"))
		if len(f) == 2 && f[1] == string(session.StatusAwaiting) {
			id = f[0]
			return true, nil
		}
		return false, nil
	})
	out, err = kubectl(mallory, "", "patch", "session", "orphan", "-n", "team-m", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	require.NoError(t, err, out)
	out, err = kubectl(mallory, "", "delete", "session", "orphan", "-n", "team-m", "--wait=true", "--timeout=30s")
	require.NoError(t, err, out)
	time.Sleep(5 * time.Second)
	x, err := a.Service.Store.GetSession(ctx, id)
	require.NoError(t, err)
	require.False(t, x.Status.Terminal(), "the Session resource is gone, its session still %s", x.Status)

	// 5. A failed session's resource is never let go: not sealed.
	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, ".git"), []byte("gitdir: /nonexistent\n"), 0o644))
	out, err = kubectl(admin, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: doomed, namespace: team-a}\nspec: {agent: secret-fixer, repository: "+broken+", message: hi}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	waitFor(t, "doomed failed", func() (bool, error) {
		f := strings.Fields(get(admin, "team-a", "session/doomed", "{.status.sessionID} {.status.status}"))
		if len(f) == 2 && f[1] == string(session.StatusFailed) {
			id = f[0]
			return true, nil
		}
		return false, nil
	})
	out, err = kubectl(admin, "", "delete", "session", "doomed", "-n", "team-a", "--wait=true", "--timeout=15s")
	require.Error(t, err, "deleting a failed session's resource times out: %s", out)
	require.NotEmpty(t, get(admin, "team-a", "session/doomed", "{.metadata.deletionTimestamp}"))
	seal, err := a.Service.Store.AuditSeal(ctx, id)
	require.NoError(t, err)
	require.Nil(t, seal)
	// Even the collector, past any retention, does not seal it (no copy).
	collected, err := a.Service.GC(ctx, time.Now().Add(30*24*time.Hour))
	require.NoError(t, err)
	t.Logf("collected: %+v", collected)
	seal, err = a.Service.Store.AuditSeal(ctx, id)
	require.NoError(t, err)
	require.Nil(t, seal, "the failed session is never sealed")
	out, err = kubectl(admin, "", "delete", "namespace", "team-a", "--wait=true", "--timeout=10s")
	require.Error(t, err, "the namespace stays Terminating: %s", out)
	out, err = kubectl(admin, "", "patch", "session", "doomed", "-n", "team-a", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	require.NoError(t, err, out)

	// 6. Leadership lost once (an API server blip, here an intruding
	// holder) stops the controller for good on this node.
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	out, err = kubectl(admin, "", "patch", "lease", "paddock-controller", "-n", "paddock", "--type=merge", "-p",
		`{"spec":{"holderIdentity":"intruder","leaseDurationSeconds":15,"acquireTime":"`+now+`","renewTime":"`+now+`"}}`)
	require.NoError(t, err, out)
	time.Sleep(35 * time.Second) // renew deadline 10 s, then the intruder's lease expires
	out, err = kubectl(mallory, "apiVersion: paddock.dev/v1alpha1\nkind: Session\nmetadata: {name: late, namespace: team-m}\nspec: {agent: worker, message: hi}\n", "apply", "-f", "-")
	require.NoError(t, err, out)
	time.Sleep(30 * time.Second)
	require.Empty(t, get(admin, "team-m", "session/late", "{.metadata.finalizers}{.status.sessionID}"), "nothing reconciles any more")
	t.Logf("lease holder now: %q", get(admin, "paddock", "lease/paddock-controller", "{.spec.holderIdentity}"))
}
