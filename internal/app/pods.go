package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paddock-dev/paddock/internal/config"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/pod"
	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/temporalserver"
	"github.com/paddock-dev/paddock/internal/vault"
)

// kubernetes is the cluster of PADDOCK_KUBECONFIG and the namespace this
// node runs in (the pod's, or the kubeconfig context's).
func kubernetes(cfg config.Config) (*rest.Config, string, error) {
	var rc *rest.Config
	var err error
	namespace := "default"
	if cfg.Kubeconfig == "in-cluster" {
		rc, err = rest.InClusterConfig()
		if data, rerr := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); rerr == nil {
			namespace = strings.TrimSpace(string(data))
		}
	} else {
		kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}, nil)
		if rc, err = kc.ClientConfig(); err == nil {
			if ns, _, nerr := kc.Namespace(); nerr == nil && ns != "" {
				namespace = ns
			}
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("PADDOCK_KUBECONFIG: %w", err)
	}
	return rc, namespace, nil
}

// pods makes sessions' sandboxes pods of the cluster (PADDOCK_POD_IMAGE):
// agent-sandbox Sandboxes whose executor this node reaches with a
// certificate of the executors' authority, kept by the store like the
// other shared secrets. Idle ones are suspended until Stop.
func (a *App) pods(ctx context.Context, acts *durable.Activities, cfg config.Config, st secrets, key *vault.Key) error {
	rc, namespace, err := kubernetes(cfg)
	if err != nil {
		return err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return fmt.Errorf("PADDOCK_KUBECONFIG: %w", err)
	}
	caPEM, caKey, err := authority(ctx, st, key, "executor-ca")
	if err != nil {
		return fmt.Errorf("the sandbox executors' authority: %w", err)
	}
	pki, err := temporalserver.Issue(caPEM, caKey, "paddock-worker")
	if err != nil {
		return err
	}
	p := cfg.Pods
	runtimeClass := p.RuntimeClass
	switch runtimeClass {
	case "none":
		runtimeClass = ""
	case "":
		if runtimeClass, err = pod.RuntimeClass(ctx, c); err != nil {
			return err
		}
	}
	if runtimeClass == "" {
		a.logger.Warn("sandbox pods run on the cluster's default runtime (no gVisor or Kata RuntimeClass found, or PADDOCK_POD_RUNTIME_CLASS=none): the pod's kernel is the node's")
	}
	disk := cfg.SessionMaxDisk
	if disk == 0 {
		disk = config.DefaultSessionMaxDisk
	}
	owner := -1
	if acts.Copies.UID != 0 {
		owner = acts.Copies.UID
	}
	if err := environments(acts, cfg); err != nil {
		return err
	}
	if err := a.fetches(ctx, acts, cfg); err != nil {
		return err
	}
	cert := pki.ClientTLS().Certificates[0]
	// The pods' egress gateway: commands allowed the network reach their
	// run's proxy through it, and nothing else (the pods' network policy).
	ln, err := net.Listen("tcp", p.Egress)
	if err != nil {
		return fmt.Errorf("PADDOCK_POD_EGRESS_ADDRESS: the sandbox pods' egress gateway: %w", err)
	}
	gw := &egress.Gateway{Addr: ln.Addr().String(), Name: temporalserver.ServerName, Logger: a.logger,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}}
	boxes := &pod.Sandboxes{Client: c, Keys: executorKeys{st, key}, Cert: cert, Owner: owner, Limit: disk, Logger: a.logger, Gateway: gw,
		Config: pod.Config{Namespace: p.Namespace, Image: p.Image, RuntimeClass: runtimeClass, CPUs: cfg.CommandMaxCPUs, Memory: sandbox.DefaultMaxMemory,
			Disk: disk, StorageClass: p.StorageClass, WarmPool: int32(p.WarmPool), Idle: p.Idle, CA: caPEM, WorkersNamespace: namespace,
			EgressPort: ln.Addr().(*net.TCPAddr).Port}}
	if tmpl, err := boxes.Install(ctx); err != nil {
		// Tried again at each command; sessions say why until it works.
		a.logger.Warn("SANDBOX PODS NOT INSTALLED yet (is agent-sandbox installed, and may Paddock create its resources?)", "err", err)
	} else {
		a.logger.Info("sandboxes run as pods", "namespace", p.Namespace, "template", tmpl.GetName(), "runtimeClass", runtimeClass, "warmPool", p.WarmPool, "idle", p.Idle)
	}
	acts.Shell = boxes
	acts.Copies.Remote = boxes
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		boxes.Reaper(rctx, min(max(p.Idle/3, time.Second), time.Minute))
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		if err := gw.Serve(rctx, ln); err != nil {
			a.logger.Error("the sandbox pods' egress gateway stopped", "err", err)
		}
	}()
	a.closers = append(a.closers, func() error { cancel(); <-done; <-done; return nil })
	return nil
}

// executorKeys keeps each session's executor key in the store, sealed
// like the other shared secrets, as the first node to meet it saw it.
type executorKeys struct {
	st  secrets
	key *vault.Key
}

func (k executorKeys) Keep(ctx context.Context, session, key string) (string, error) {
	kept, err := sharedSecret(ctx, k.st, k.key, "executor-key/"+session, []byte(key))
	return string(kept), err
}
