package pod_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-dev/paddock/internal/executor"
	"github.com/paddock-dev/paddock/internal/pod"
	"github.com/paddock-dev/paddock/internal/pod/podtest"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// TestForeignObjectsRefused (from an attack review): another tenant with
// rights in the sandboxes' namespace plants, before Paddock, a
// NetworkPolicy named as Paddock's that allows all egress, another that
// does so under a name of its own (network policies add up), and a
// SandboxClaim named and labelled as a session's, bound to a template of
// theirs (not selected by the policy, no runtime class). Paddock makes
// the policy of its name its own, refuses to run while the other one
// exists (at install, and when one appears later), and sends the
// session's copy to no sandbox of theirs.
func TestForeignObjectsRefused(t *testing.T) {
	const ns = "paddock-sandboxes"
	c, caPEM, cert := apiServer(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := pod.Config{Namespace: ns, Image: "registry.example/paddock:test", RuntimeClass: "gvisor", WarmPool: 0,
		Idle: 10 * time.Minute, CA: caPEM, WorkersNamespace: "paddock"}

	// The tenant's plants.
	allowAll := func(name string) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{}}}} // everything, everywhere
	}
	require.NoError(t, c.Create(ctx, allowAll("paddock-sandboxes")))
	require.NoError(t, c.Create(ctx, allowAll("tenant-open")))
	evil, err := pod.Template(cfg) // the CA is public: it is in every sandbox pod's env
	require.NoError(t, err)
	evil.SetName("tenant-template")
	unstructured.RemoveNestedField(evil.Object, "spec", "podTemplate", "spec", "runtimeClassName")
	require.NoError(t, unstructured.SetNestedStringMap(evil.Object, map[string]string{"tenant": "mine"}, "spec", "podTemplate", "metadata", "labels"))
	require.NoError(t, c.Create(ctx, evil))
	evilPool := pod.WarmPool(cfg, "tenant-template")
	require.NoError(t, c.Create(ctx, evilPool))
	planted := pod.Claim(cfg, "tenant-template", "S-2") // same name and session label as Paddock's
	require.NoError(t, c.Create(ctx, planted))

	cluster := podtest.Start(t, c, ns, 65532)

	keys := &memKeys{kept: map[string]string{}}
	boxes := &pod.Sandboxes{Client: c, Keys: keys, Config: cfg, Cert: cert, Owner: -1, Limit: 1 << 30, Ready: time.Minute}
	_, err = boxes.Install(ctx)
	require.ErrorIs(t, err, pod.ErrForeign, "no sandbox runs beside the tenant's policy")
	require.ErrorContains(t, err, "NetworkPolicy paddock-sandboxes/tenant-open is not Paddock's")
	var np networkingv1.NetworkPolicy
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "paddock-sandboxes"}, &np))
	require.Equal(t, pod.NetworkPolicy(cfg).Spec, np.Spec, "the policy under Paddock's name is Paddock's now")
	require.NoError(t, c.Delete(ctx, allowAll("tenant-open")))
	_, err = boxes.Install(ctx)
	require.NoError(t, err)

	// A policy planted after the install stops the sandboxes at the
	// reaper's next look.
	require.NoError(t, c.Create(ctx, allowAll("tenant-later")))
	_, err = boxes.Reap(ctx)
	require.ErrorIs(t, err, pod.ErrForeign)
	_, err = boxes.Run(ctx, sandbox.Command{Place: sandbox.Place{Session: "S-3", Workdir: t.TempDir()}, Script: "true", Timeout: time.Minute})
	require.ErrorIs(t, err, pod.ErrForeign)
	require.ErrorContains(t, err, "NetworkPolicy paddock-sandboxes/tenant-later is not Paddock's")
	require.NoError(t, c.Delete(ctx, allowAll("tenant-later")))

	// Paddock's own policy widened in place (a rule added, a port range):
	// the reaper notices, and the next install makes it exactly Paddock's.
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "paddock-sandboxes"}, &np))
	end := int32(65535)
	np.Spec.Egress[0].Ports[0].EndPort = &end
	np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
	require.NoError(t, c.Update(ctx, &np))
	_, err = boxes.Reap(ctx)
	require.ErrorIs(t, err, pod.ErrForeign)
	require.ErrorContains(t, err, "was changed")
	_, err = boxes.Install(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "paddock-sandboxes"}, &np))
	require.Equal(t, pod.NetworkPolicy(cfg).Spec, np.Spec, "exactly Paddock's again")

	// Paddock's policy deleted (the pods would be open): the same.
	require.NoError(t, c.Delete(ctx, &np))
	_, err = boxes.Reap(ctx)
	require.ErrorIs(t, err, pod.ErrForeign)
	require.ErrorContains(t, err, "is gone")
	_, err = boxes.Install(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "paddock-sandboxes"}, &np))
	require.Equal(t, pod.NetworkPolicy(cfg).Spec, np.Spec, "made again")

	// Between the reaper's looks, each command checks for itself: a
	// widened policy is made Paddock's again, another one refused.
	np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
	require.NoError(t, c.Update(ctx, &np))
	_, err = boxes.Install(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "paddock-sandboxes"}, &np))
	require.Equal(t, pod.NetworkPolicy(cfg).Spec, np.Spec, "made Paddock's again before the command")
	require.NoError(t, c.Create(ctx, allowAll("tenant-between")))
	_, err = boxes.Install(ctx)
	require.ErrorIs(t, err, pod.ErrForeign)
	require.ErrorContains(t, err, "tenant-between is not Paddock's")
	require.NoError(t, c.Delete(ctx, allowAll("tenant-between")))

	// A CNI's own policy kind adds to Paddock's NetworkPolicy too: one in
	// the namespace stops the sandboxes at the reaper's look, and install
	// refuses while it is there.
	cilium := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
		"metadata": map[string]any{"name": "tenant-cilium", "namespace": ns},
		"spec":     map[string]any{"endpointSelector": map[string]any{}, "egress": []any{map[string]any{"toEntities": []any{"world"}}}},
	}}
	require.NoError(t, c.Create(ctx, cilium))
	_, err = boxes.Reap(ctx)
	require.ErrorIs(t, err, pod.ErrForeign)
	_, err = boxes.Install(ctx)
	require.ErrorIs(t, err, pod.ErrForeign)
	require.ErrorContains(t, err, "CiliumNetworkPolicy paddock-sandboxes/tenant-cilium (cilium.io) is not Paddock's")
	require.NoError(t, c.Delete(ctx, cilium))
	// Antrea's, in the only version an Antrea before 1.13 serves.
	antrea := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.antrea.io/v1alpha1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": "tenant-antrea", "namespace": ns},
		"spec":     map[string]any{"appliedTo": []any{map[string]any{"podSelector": map[string]any{}}}, "egress": []any{map[string]any{"action": "Allow"}}},
	}}
	require.NoError(t, c.Create(ctx, antrea))
	_, err = boxes.Install(ctx)
	require.ErrorContains(t, err, "NetworkPolicy paddock-sandboxes/tenant-antrea (crd.antrea.io) is not Paddock's")
	require.NoError(t, c.Delete(ctx, antrea))
	_, err = boxes.Install(ctx)
	require.NoError(t, err)

	host := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(host, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "secret.txt"), []byte("the user's code\n"), 0o644))
	var out bytes.Buffer
	_, err = boxes.Run(ctx, sandbox.Command{Place: sandbox.Place{Session: "S-2", Workdir: host}, ID: "x", Script: "cat secret.txt", Stdout: &out, Stderr: &out, Timeout: time.Minute})
	require.ErrorIs(t, err, pod.ErrForeign)
	require.ErrorContains(t, err, "SandboxClaim paddock-sandboxes/"+pod.ClaimName("S-2")+" is not the one Paddock makes")
	require.Empty(t, out.String())
	require.NotContains(t, cluster.Logs(), "copy received", "the copy went to no sandbox of theirs")
	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(pod.ClaimKind)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.ClaimName("S-2")}, claim))
	require.Empty(t, claim.GetAnnotations(), "nothing of Paddock's on their claim")
	require.Empty(t, keys.kept["S-2"], "no executor of theirs was kept")

	// The key a session keeps is the store's, which no user of the
	// cluster writes (it was on the claim, which whoever may update
	// claims could reset): a pod showing another key gets nothing.
	keys.kept["S-4"] = strings.Repeat("0", 64)
	_, err = boxes.Run(ctx, sandbox.Command{Place: sandbox.Place{Session: "S-4", Workdir: host}, ID: "y", Script: "cat secret.txt", Stdout: &out, Stderr: &out, Timeout: time.Minute})
	require.ErrorIs(t, err, executor.ErrKeyChanged)
	require.ErrorContains(t, err, "of session S-4: the executor's key is not the one the session keeps")
	require.Empty(t, out.String())
	// The node knows the kept key now: the next command dials the pod
	// pinned to it, and is refused in the handshake.
	_, err = boxes.Run(ctx, sandbox.Command{Place: sandbox.Place{Session: "S-4", Workdir: host}, ID: "z", Script: "cat secret.txt", Stdout: &out, Stderr: &out, Timeout: time.Minute})
	require.ErrorIs(t, err, executor.ErrKeyChanged)
	require.Empty(t, out.String())
	require.NotContains(t, cluster.Logs(), "copy received", "the copy went to no executor but the session's")
}
