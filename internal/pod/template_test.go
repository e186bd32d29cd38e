package pod

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

var shape = Config{Namespace: "sandboxes", Image: "registry.example/paddock-go:1", RuntimeClass: "gvisor", Port: 7443, CPUs: 2, Memory: 3 << 30, Disk: 5 << 30,
	CA: []byte("-----BEGIN CERTIFICATE-----\n"), WorkersNamespace: "paddock"}

// TestPodSpecIsRestricted checks the generated pod spec field by field
// and with the upstream restricted Pod Security Standard checker, which
// refuses each weakening of it.
func TestPodSpecIsRestricted(t *testing.T) {
	spec := PodSpec(shape)
	require.NoError(t, Restricted(&spec))

	require.Equal(t, "gvisor", *spec.RuntimeClassName)
	require.False(t, *spec.AutomountServiceAccountToken)
	require.False(t, *spec.EnableServiceLinks)
	require.False(t, spec.HostNetwork || spec.HostPID || spec.HostIPC)
	psc := spec.SecurityContext
	require.True(t, *psc.RunAsNonRoot)
	require.EqualValues(t, UID, *psc.RunAsUser)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.Equal(t, []string{"paddock", "kube", "executor", "--listen", ":7443", "--workdir", Workdir, "--deps", Deps, "--state", State,
		"--scratch", "/tmp", "--scratch", sandbox.Home, "--scratch", "/dev/shm", "--cache", sandbox.CacheMount}, c.Command)
	require.False(t, *spec.ShareProcessNamespace, "the executor is the first process of its pod's PID namespace")
	sc := c.SecurityContext
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.False(t, *sc.Privileged)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Empty(t, sc.Capabilities.Add)
	require.Equal(t, "2", c.Resources.Limits.Cpu().String())
	require.Equal(t, "3Gi", c.Resources.Limits.Memory().String())
	require.NotNil(t, c.Resources.Limits.StorageEphemeral())
	require.Equal(t, []corev1.EnvVar{{Name: "PADDOCK_EXECUTOR_CA", Value: string(shape.CA)}}, c.Env, "the authority only: no secret in the pod")
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	require.ElementsMatch(t, []string{Volume, sandbox.Home, sandbox.CacheMount, "/tmp"}, mounts)
	for _, v := range spec.Volumes {
		require.NotNil(t, v.EmptyDir, "only scratch volumes besides the session's own: %s", v.Name)
		require.NotNil(t, v.EmptyDir.SizeLimit)
	}

	// The checker is not a formality: each weakening is refused.
	for name, weaken := range map[string]func(*corev1.PodSpec){
		"root": func(s *corev1.PodSpec) {
			s.SecurityContext.RunAsNonRoot = ptr(false)
			s.SecurityContext.RunAsUser = ptr(int64(0))
		},
		"a capability": func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		},
		"privilege escalation": func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr(true) },
		"no seccomp": func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = nil
			s.Containers[0].SecurityContext.SeccompProfile = nil
		},
		"host path": func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		},
		"host network": func(s *corev1.PodSpec) { s.HostNetwork = true },
		"privileged":   func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Privileged = ptr(true) },
	} {
		weak := PodSpec(shape)
		weaken(&weak)
		require.Error(t, Restricted(&weak), name)
	}
}

func TestTemplate(t *testing.T) {
	tmpl, err := Template(shape)
	require.NoError(t, err)
	require.Equal(t, TemplateKind, tmpl.GroupVersionKind())
	require.Equal(t, "sandboxes", tmpl.GetNamespace())
	again, err := Template(shape)
	require.NoError(t, err)
	require.Equal(t, tmpl.GetName(), again.GetName(), "named by its content")
	other := shape
	other.Memory = 1 << 30
	changed, err := Template(other)
	require.NoError(t, err)
	require.NotEqual(t, tmpl.GetName(), changed.GetName(), "another shape, another template")

	// The pod spec in the template is the checked one.
	raw, found, err := unstructured.NestedMap(tmpl.Object, "spec", "podTemplate", "spec")
	require.NoError(t, err)
	require.True(t, found)
	b, _ := json.Marshal(raw)
	var spec corev1.PodSpec
	require.NoError(t, json.Unmarshal(b, &spec))
	require.NoError(t, Restricted(&spec))
	require.Equal(t, PodSpec(shape).Containers[0].Command, spec.Containers[0].Command)
	labels, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "podTemplate", "metadata", "labels")
	require.Equal(t, "true", labels[SandboxLabel], "the network policy selects the pods")
	mgmt, _, _ := unstructured.NestedString(tmpl.Object, "spec", "networkPolicyManagement")
	require.Equal(t, "Unmanaged", mgmt, "Paddock's own policy applies, not agent-sandbox's default (which allows the internet)")
	inject, _, _ := unstructured.NestedString(tmpl.Object, "spec", "envVarsInjectionPolicy")
	require.Equal(t, "Disallowed", inject)
	claims, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "volumeClaimTemplates")
	require.Len(t, claims, 1)
	size, _, _ := unstructured.NestedString(claims[0].(map[string]any), "spec", "resources", "requests", "storage")
	require.Equal(t, "5Gi", size)

}

func TestNetworkPolicy(t *testing.T) {
	np := NetworkPolicy(shape)
	require.Equal(t, map[string]string{SandboxLabel: "true"}, np.Spec.PodSelector.MatchLabels)
	require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Ingress, 1)
	in := np.Spec.Ingress[0]
	require.Len(t, in.Ports, 1)
	require.Equal(t, int32(7443), in.Ports[0].Port.IntVal, "only the executor's port")
	require.Len(t, in.From, 1)
	require.Equal(t, map[string]string{"app.kubernetes.io/name": "paddock"}, in.From[0].PodSelector.MatchLabels)
	require.Equal(t, map[string]string{"kubernetes.io/metadata.name": "paddock"}, in.From[0].NamespaceSelector.MatchLabels, "Paddock's pods in Paddock's namespace only")
	// Egress: the workers' gateway alone, on its port alone (not even DNS).
	require.Len(t, np.Spec.Egress, 1)
	out := np.Spec.Egress[0]
	require.Len(t, out.Ports, 1)
	require.Equal(t, corev1.ProtocolTCP, *out.Ports[0].Protocol)
	require.Equal(t, int32(DefaultEgressPort), out.Ports[0].Port.IntVal)
	require.Nil(t, out.Ports[0].EndPort)
	require.Equal(t, in.From, out.To, "to Paddock's pods in Paddock's namespace only")

	// The other side: the deployed nodes let only the sandbox pods reach
	// their gateway.
	deployed, err := os.ReadFile("../../deploy/kubernetes/paddock.yaml")
	require.NoError(t, err)
	require.Contains(t, string(deployed), `podSelector: {matchLabels: {`+SandboxLabel+`: "true"}}
      ports: [{protocol: TCP, port: `+strconv.Itoa(DefaultEgressPort)+`}]`)
}

func TestClaimName(t *testing.T) {
	require.Equal(t, "paddock-s-01h8xyz", ClaimName("s-01h8xyz"))
	long := ClaimName("S_01H8XYZABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	require.LessOrEqual(t, len(long), 63)
	require.NotEqual(t, long, ClaimName("S_01H8XYZABCDEFGHIJKLMNOPQRSTUVWXYZ0123456788"))
	require.NotEqual(t, ClaimName("AB"), ClaimName("ab"), "IDs differing in case name different claims")
}
