// Package kube runs Paddock's Kubernetes controller: Agent and Session
// custom resources (paddock.dev/v1alpha1) reconciled into the Paddock
// service, and the sessions' state mirrored back into their status, so
// `kubectl apply` starts a session and `kubectl get sessions -w` follows
// it. A namespace is the Paddock project of the same name.
package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/kube/crds"
)

// Group is the API group of Paddock's resources.
const Group = "paddock.dev"

var (
	// AgentKind and SessionKind name the resources.
	AgentKind   = schema.GroupVersionKind{Group: Group, Version: "v1alpha1", Kind: "Agent"}
	SessionKind = schema.GroupVersionKind{Group: Group, Version: "v1alpha1", Kind: "Session"}
)

// CRDs returns the custom resource definitions, as `paddock kube crds`
// prints them for `kubectl apply -f -`.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(crds.YAML), 4096)
	for {
		var c apiextensionsv1.CustomResourceDefinition
		if err := dec.Decode(&c); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("paddock's CRDs: %w", err)
		}
		out = append(out, &c)
	}
}

// Options configure the controller.
type Options struct {
	// LeaderNamespace holds the Lease that makes one node of several run
	// the controller, the others standing by.
	LeaderNamespace string
	// Resync is how often a live session's status is mirrored again
	// (default 2 s).
	Resync time.Duration
	// Admin is the Paddock user the controller acts as when nobody asks
	// (stopping the session of a deleted Session).
	Admin string
	// Sweep is how often sessions whose Session resource is gone are
	// looked for and stopped (default a minute).
	Sweep time.Duration
	// UserPrefix is what Kubernetes user names carry before the Paddock
	// user's name (the cluster's OIDC prefix, say "oidc:").
	UserPrefix string
	// Users maps Kubernetes users (service accounts among them) to
	// Paddock users, ahead of UserPrefix.
	Users  map[string]string
	Logger *slog.Logger
}

// Start runs the controller until ctx ends. It returns once the
// controller's caches are synced, or with why it could not start. A node
// that loses its Lease (the API server was out of reach longer than the
// renew deadline) stands by again for it with a fresh manager, as nodes
// that never had it do.
func Start(ctx context.Context, cfg *rest.Config, svc *engine.Service, o Options) error {
	if o.Resync == 0 {
		o.Resync = 2 * time.Second
	}
	if o.Sweep == 0 {
		o.Sweep = time.Minute
	}
	log.SetLogger(logr.FromSlogHandler(o.Logger.Handler()))
	mgr, err := newManager(cfg, svc, o)
	if err != nil {
		return err
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(ctx) }()
	select {
	case err := <-errs:
		return fmt.Errorf("kubernetes controller: %w", err)
	case ok := <-synced:
		if !ok {
			return fmt.Errorf("kubernetes controller: the caches never synced (are the CRDs installed? paddock kube crds | kubectl apply -f -)")
		}
	}
	go func() {
		for {
			err := <-errs
			if ctx.Err() != nil {
				return
			}
			o.Logger.Warn("kubernetes controller stopped; standing by for the Lease again", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if mgr, err = newManager(cfg, svc, o); err != nil {
				o.Logger.Error("kubernetes controller", "err", err)
				continue
			}
			go func() { errs <- mgr.Start(ctx) }()
		}
	}()
	return nil
}

var skip = true

// newManager makes a manager running both reconcilers under the Lease.
func newManager(cfg *rest.Config, svc *engine.Service, o Options) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  runtime.NewScheme(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "paddock-controller",
		LeaderElectionNamespace: o.LeaderNamespace,
		// controller-runtime's default is to exit the process; this node
		// goes on serving and stands by for the Lease again.
		LeaderElectionReleaseOnCancel: true,
		// A manager made again after a lost Lease names its controllers
		// as the first did.
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes controller: %w", err)
	}
	users := &requesters{svc: svc, reader: mgr.GetAPIReader(), prefix: o.UserPrefix, users: o.Users}
	agents := &agentReconciler{c: mgr.GetClient(), svc: svc, users: users}
	if err := ctrl.NewControllerManagedBy(mgr).Named("agent").For(object(AgentKind)).Complete(agents); err != nil {
		return nil, err
	}
	sessions := &sessionReconciler{c: mgr.GetClient(), svc: svc, users: users, admin: o.Admin, resync: o.Resync}
	if err := ctrl.NewControllerManagedBy(mgr).Named("session").For(object(SessionKind)).Complete(sessions); err != nil {
		return nil, err
	}
	if err := mgr.Add(&sweeper{c: mgr.GetClient(), svc: svc, admin: o.Admin, every: o.Sweep, logger: o.Logger}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// object is an empty resource of kind k.
func object(k schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	return u
}
