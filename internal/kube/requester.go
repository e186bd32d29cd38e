package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
)

// RequesterAnnotation names, on an Agent or Session, the Kubernetes user
// who asked for it: stamped by the API server (the admission policies of
// deploy/kubernetes/admission.yaml), never by its author.
const RequesterAnnotation = "paddock.dev/requester"

// policyName is the name of the admission policies and their bindings.
const policyName = "paddock-requester"

// errNoStamp says the API server does not stamp requesters: without it an
// author could write any requester, so nothing is acted on.
var errNoStamp = errors.New("the API server does not stamp requesters (the admission policies paddock-requester are missing): apply deploy/kubernetes/admission.yaml")

// requesters maps a resource's requester to the Paddock user Paddock acts
// for.
type requesters struct {
	svc    *engine.Service
	reader client.Reader // uncached: the bindings are not watched
	prefix string
	users  map[string]string // Kubernetes user: Paddock user, before prefix

	mu      sync.Mutex
	checked time.Time
	stamped bool
}

// principal is who asked for u, as a Paddock caller: the Paddock user named
// as the requesting Kubernetes user less the prefix, with that user's
// roles, through Kubernetes.
func (r *requesters) principal(ctx context.Context, u *unstructured.Unstructured) (identity.Principal, error) {
	if err := r.stamping(ctx); err != nil {
		return identity.Principal{}, err
	}
	who := u.GetAnnotations()[RequesterAnnotation]
	if who == "" {
		return identity.Principal{}, fmt.Errorf("%w: the resource names no requester (made before the admission policies were applied: create it again)", errdefs.ErrDenied)
	}
	user, err := r.user(who)
	if err != nil {
		return identity.Principal{}, err
	}
	return r.svc.Access.Principal(ctx, user, via(u))
}

// user is the Paddock user a Kubernetes user is: named in the mapping
// (service accounts only so), else the name less the prefix.
func (r *requesters) user(who string) (string, error) {
	if user, ok := r.users[who]; ok {
		return user, nil
	}
	user, ok := strings.CutPrefix(who, r.prefix)
	if !ok || user == "" || strings.HasPrefix(who, "system:") {
		return "", fmt.Errorf("%w: Kubernetes user %s is not one of Paddock's (a person's name with PADDOCK_KUBE_USER_PREFIX %q, or one PADDOCK_KUBE_USERS maps)", errdefs.ErrDenied, who, r.prefix)
	}
	return user, nil
}

// via names the resource a caller acted through.
func via(u *unstructured.Unstructured) string {
	return fmt.Sprintf("kubernetes:%s/%s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// stamping checks (once a minute) that both admission policies are bound.
func (r *requesters) stamping(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < time.Minute {
		if r.stamped {
			return nil
		}
		return errNoStamp
	}
	r.stamped = true
	for _, kind := range []string{"MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"} {
		b := &unstructured.Unstructured{}
		b.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: kind})
		if err := r.reader.Get(ctx, types.NamespacedName{Name: policyName}, b); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("check the admission policies: %w", err)
			}
			r.stamped = false
		}
		if name, _, _ := unstructured.NestedString(b.Object, "spec", "policyName"); name != policyName {
			r.stamped = false
		}
	}
	r.checked = time.Now()
	if !r.stamped {
		return errNoStamp
	}
	return nil
}
