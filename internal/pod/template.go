// Package pod runs sessions' sandboxes as pods on Kubernetes, through
// the resources of the Kubernetes SIG project agent-sandbox
// (agents.x-k8s.io): Paddock installs a SandboxTemplate of the restricted
// Pod Security Standard (checked with the upstream pod-security-admission
// library before it is installed), a SandboxWarmPool of it and a
// NetworkPolicy; each session claims a Sandbox (SandboxClaim), whose pod
// runs `paddock kube executor` on a volume of its own; its only network
// is its node's egress gateway, for commands allowed the network. An idle Sandbox is
// suspended (pod gone, volume kept) and resumed by the session's next
// command; the session's end deletes it.
package pod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// The agent-sandbox kinds Paddock uses (its v1beta1 API).
var (
	SandboxKind  = schema.GroupVersionKind{Group: "agents.x-k8s.io", Version: "v1beta1", Kind: "Sandbox"}
	TemplateKind = schema.GroupVersionKind{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxTemplate"}
	ClaimKind    = schema.GroupVersionKind{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxClaim"}
	WarmPoolKind = schema.GroupVersionKind{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Kind: "SandboxWarmPool"}
)

// Labels and annotations Paddock sets.
const (
	// SandboxLabel marks sandbox pods (the NetworkPolicy selects them).
	SandboxLabel = "paddock.dev/sandbox"
	// SessionLabel names a claim's session.
	SessionLabel = "paddock.dev/session"
	// IdleAnnotation says, on a Sandbox, when it may be suspended.
	IdleAnnotation = "paddock.dev/idle-after"
	managedBy      = "app.kubernetes.io/managed-by"
)

// Paths inside a sandbox pod.
const (
	// Volume is the mount of the session's volume: the executor's copy
	// and state, and the build cache.
	Volume  = "/paddock"
	Workdir = Volume + "/work"
	Deps    = Volume + "/deps"
	State   = Volume + "/state"
	// UID runs the executor and the commands.
	UID = 65532
)

// policyName names Paddock's NetworkPolicy, the namespace's only one.
const policyName = "paddock-sandboxes"

// DefaultEgressPort is where workers serve sandbox pods' egress gateway.
const DefaultEgressPort = 7444

// Config shapes the sandboxes.
type Config struct {
	// Namespace holds the sandboxes, their template and policy.
	Namespace string
	// Image has `paddock` on its PATH, bash and the toolchains commands use.
	Image string
	// RuntimeClass is the pods' RuntimeClass (gVisor, Kata); empty: none.
	RuntimeClass string
	// Port is the executor's; EgressPort is the workers' egress
	// gateway's, the one destination the pods may reach.
	Port       int
	EgressPort int
	// CPUs, Memory (bytes) bound each pod; Disk (bytes) is its volume's size.
	CPUs   float64
	Memory int64
	Disk   int64
	// StorageClass of the volume (empty: the cluster's default).
	StorageClass string
	// WarmPool is how many sandboxes wait ready to be claimed.
	WarmPool int32
	// Idle is how long a sandbox stays up with no command.
	Idle time.Duration
	// CA is the PEM authority of the workers' certificates, which the
	// executor requires.
	CA []byte
	// Workers selects the pods allowed to reach the executor: Paddock's,
	// in WorkersNamespace.
	Workers          map[string]string
	WorkersNamespace string
}

func (c Config) defaults() Config {
	if c.Port == 0 {
		c.Port = 7443
	}
	if c.EgressPort == 0 {
		c.EgressPort = DefaultEgressPort
	}
	if c.CPUs == 0 {
		c.CPUs = sandbox.DefaultMaxCPUs
	}
	if c.Memory == 0 {
		c.Memory = sandbox.DefaultMaxMemory
	}
	if c.Disk == 0 {
		c.Disk = 10 << 30
	}
	if c.Idle == 0 {
		c.Idle = 15 * time.Minute
	}
	if c.Workers == nil {
		c.Workers = map[string]string{"app.kubernetes.io/name": "paddock"}
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// PodSpec is what every sandbox pod runs: the executor as a non-root
// user with no capability, no privilege escalation, a read-only root, the
// runtime's default seccomp profile, no service account token and the
// configured limits; writable are only the session's volume, /tmp and the
// home directory.
func PodSpec(c Config) corev1.PodSpec {
	c = c.defaults()
	limits := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(c.CPUs*1000), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(c.Memory, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(sandbox.DefaultTmpSize+(256<<20), resource.BinarySI),
	}
	requests := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("100m"),
		corev1.ResourceMemory:           resource.MustParse("256Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("256Mi"),
	}
	for k, v := range requests {
		if l := limits[k]; v.Cmp(l) > 0 {
			requests[k] = l
		}
	}
	spec := corev1.PodSpec{
		AutomountServiceAccountToken: ptr(false),
		EnableServiceLinks:           ptr(false),
		// The executor is PID 1 of the pod's own PID namespace: it kills
		// what a command leaves by signalling every other process there.
		ShareProcessNamespace:         ptr(false),
		TerminationGracePeriodSeconds: ptr(int64(10)),
		RestartPolicy:                 corev1.RestartPolicyAlways,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(UID)), RunAsGroup: ptr(int64(UID)), FSGroup: ptr(int64(UID)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:  "executor",
			Image: c.Image,
			Command: []string{"paddock", "kube", "executor", "--listen", fmt.Sprintf(":%d", c.Port), "--workdir", Workdir, "--deps", Deps, "--state", State,
				"--scratch", "/tmp", "--scratch", sandbox.Home, "--scratch", "/dev/shm", "--cache", sandbox.CacheMount},
			Env:   []corev1.EnvVar{{Name: "PADDOCK_EXECUTOR_CA", Value: string(c.CA)}},
			Ports: []corev1.ContainerPort{{Name: "executor", ContainerPort: int32(c.Port), Protocol: corev1.ProtocolTCP}},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), RunAsNonRoot: ptr(true), Privileged: ptr(false),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Resources: corev1.ResourceRequirements{Limits: limits, Requests: requests},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "copy", MountPath: Volume},
				{Name: "home", MountPath: sandbox.Home},
				{Name: "copy", MountPath: sandbox.CacheMount, SubPath: "cache"},
				{Name: "tmp", MountPath: "/tmp"},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(c.Port))}}, PeriodSeconds: 2},
		}},
		Volumes: []corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(sandbox.DefaultTmpSize, resource.BinarySI)}}},
			{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(256<<20, resource.BinarySI)}}},
		},
	}
	if c.RuntimeClass != "" {
		spec.RuntimeClassName = ptr(c.RuntimeClass)
	}
	return spec
}

// Restricted checks a pod spec against the restricted Pod Security
// Standard, with the upstream pod-security-admission library: nil, or
// what the standard forbids.
func Restricted(spec *corev1.PodSpec) error {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return err
	}
	res := policy.AggregateCheckResults(eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &metav1.ObjectMeta{}, spec))
	if res.Allowed {
		return nil
	}
	var why []string
	for i, r := range res.ForbiddenReasons {
		why = append(why, r+" ("+res.ForbiddenDetails[i]+")")
	}
	return errors.New("the sandbox pod breaks the restricted Pod Security Standard: " + strings.Join(why, "; "))
}

// Template is the SandboxTemplate every claim of this shape uses, named
// after its content so a change of shape makes a new one: the pod spec,
// the volume of the working copy, no Service and no NetworkPolicy of
// agent-sandbox's (Paddock's own applies, see NetworkPolicy).
func Template(c Config) (*unstructured.Unstructured, error) {
	c = c.defaults()
	spec := PodSpec(c)
	if err := Restricted(&spec); err != nil {
		return nil, err
	}
	pvc := corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(c.Disk, resource.BinarySI)}},
	}
	if c.StorageClass != "" {
		pvc.StorageClassName = ptr(c.StorageClass)
	}
	body := map[string]any{
		"podTemplate": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{SandboxLabel: "true", managedBy: "paddock"}},
			"spec":     spec,
		},
		"volumeClaimTemplates":    []any{map[string]any{"metadata": map[string]any{"name": "copy"}, "spec": pvc}},
		"service":                 false,
		"networkPolicyManagement": "Unmanaged",
		"envVarsInjectionPolicy":  "Disallowed",
	}
	obj, err := toUnstructured(body)
	if err != nil {
		return nil, err
	}
	sum, _ := json.Marshal(obj)
	h := sha256.Sum256(sum)
	u := &unstructured.Unstructured{Object: map[string]any{"spec": obj}}
	u.SetGroupVersionKind(TemplateKind)
	u.SetNamespace(c.Namespace)
	u.SetName("paddock-" + hex.EncodeToString(h[:])[:10])
	u.SetLabels(map[string]string{managedBy: "paddock"})
	return u, nil
}

// WarmPool keeps c.WarmPool sandboxes of template ready to claim.
func WarmPool(c Config, template string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"replicas":           int64(c.WarmPool),
		"sandboxTemplateRef": map[string]any{"name": template},
	}}}
	u.SetGroupVersionKind(WarmPoolKind)
	u.SetNamespace(c.Namespace)
	u.SetName(template)
	u.SetLabels(map[string]string{managedBy: "paddock"})
	return u
}

// NetworkPolicy isolates every sandbox pod: ingress only from the
// workers to the executor's port, and egress only to the workers' egress
// gateway (no DNS either: the proxy resolves names), which serves only
// runs allowed the network, each through its own proxy.
func NetworkPolicy(c Config) *networkingv1.NetworkPolicy {
	c = c.defaults()
	workers := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: c.Workers}}
	if c.WorkersNamespace != "" {
		workers.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": c.WorkersNamespace}}
	}
	port := intstr.FromInt32(int32(c.Port))
	gateway := intstr.FromInt32(int32(c.EgressPort))
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: policyName, Namespace: c.Namespace, Labels: map[string]string{managedBy: "paddock"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{SandboxLabel: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{workers}, Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: &port}}}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{workers}, Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: &gateway}}}},
		},
	}
}

// Claim is the SandboxClaim of a session.
func Claim(c Config, pool, sessionID string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"warmPoolRef": map[string]any{"name": pool},
		"lifecycle":   map[string]any{"shutdownPolicy": "Delete"},
	}}}
	u.SetGroupVersionKind(ClaimKind)
	u.SetNamespace(c.Namespace)
	u.SetName(ClaimName(sessionID))
	u.SetLabels(map[string]string{SessionLabel: label(sessionID), managedBy: "paddock"})
	return u
}

// ClaimName is the name of a session's claim: a DNS label.
func ClaimName(sessionID string) string {
	return "paddock-" + label(sessionID)
}

// label makes a session ID a label value (lower case letters, digits
// and dashes, at most 63 characters, unique by a hash when shortened).
func label(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == id && len(s) <= 40 {
		return s
	}
	h := sha256.Sum256([]byte(id))
	if len(s) > 30 {
		s = s[:30]
	}
	return strings.Trim(s, "-") + "-" + hex.EncodeToString(h[:])[:10]
}

func toUnstructured(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return runtime.DeepCopyJSON(m), nil
}

// idleAfter reads a Sandbox's idle time (zero when unset or unreadable).
func idleAfter(u *unstructured.Unstructured) time.Time {
	s := u.GetAnnotations()[IdleAnnotation]
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0)
	}
	return time.Time{}
}
