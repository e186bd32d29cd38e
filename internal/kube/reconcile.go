package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// sealed is the finalizer a Session resource carries until its session
// stopped and its audit log is sealed.
const sealed = "paddock.dev/sealed"

// system is who the controller acts as when nobody asks: stopping and
// sealing a session whose resource was deleted (Kubernetes RBAC decided
// who may delete it), as the server's first administrator.
func system(admin string, u *unstructured.Unstructured) identity.Principal {
	return identity.Principal{User: admin, Admin: true, Via: via(u) + ":deleted"}
}

// ensureProject makes the namespace's project when Paddock lacks it, if p
// may create projects.
func ensureProject(ctx context.Context, svc *engine.Service, p identity.Principal, name string) error {
	if svc.Projects().Check(ctx, name) == nil {
		return nil
	}
	if !p.Admin {
		return fmt.Errorf("%w: Paddock has no project %s (the namespace): an administrator creates it (paddock projects create %s)", errdefs.ErrNotFound, name, name)
	}
	if err := svc.Access.CreateProject(ctx, p, name); err != nil && !errors.Is(err, errdefs.ErrConflict) {
		return fmt.Errorf("project %s (the namespace): %w", name, err)
	}
	return nil
}

// setCondition records a condition of u's status: True without err, False
// with its message otherwise.
func setCondition(u *unstructured.Unstructured, kind, reason string, err error) {
	var conds []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		data, _ := json.Marshal(raw)
		_ = json.Unmarshal(data, &conds)
	}
	c := metav1.Condition{Type: kind, Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: u.GetGeneration()}
	if err != nil {
		c.Status, c.Message = metav1.ConditionFalse, err.Error()
	}
	meta.SetStatusCondition(&conds, c)
	data, _ := json.Marshal(conds)
	var out []any
	_ = json.Unmarshal(data, &out)
	_ = unstructured.SetNestedSlice(u.Object, out, "status", "conditions")
}

type agentReconciler struct {
	c     client.Client
	svc   *engine.Service
	users *requesters
}

// Reconcile applies an Agent's spec as `paddock apply` would, named by
// the resource in the namespace's project, and says how it went.
func (r *agentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := object(AgentKind)
	if err := r.c.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if u.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil // Paddock keeps the agent: its sessions pinned it
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	spec["name"], spec["project"] = u.GetName(), u.GetNamespace()
	p, err := r.users.principal(ctx, u)
	if err == nil {
		err = ensureProject(ctx, r.svc, p, u.GetNamespace())
	}
	var applied []wire.Applied
	if err == nil {
		var text []byte
		if text, err = yaml.Marshal(spec); err == nil {
			applied, err = r.svc.Projects().ApplyAgents(ctx, p, text)
		}
	}
	reason := "Applied"
	if err != nil {
		reason = "Refused"
	} else if len(applied) == 1 {
		_ = unstructured.SetNestedField(u.Object, string(applied[0].Result), "status", "result")
	}
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	setCondition(u, "Applied", reason, err)
	if uerr := r.c.Status().Update(ctx, u); uerr != nil {
		return ctrl.Result{}, uerr
	}
	if errors.Is(err, errdefs.ErrDenied) || errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, errNoStamp) {
		return ctrl.Result{RequeueAfter: time.Minute}, nil // until the user or project exists, say
	}
	return ctrl.Result{}, nil
}

type sessionReconciler struct {
	c      client.Client
	svc    *engine.Service
	users  *requesters
	admin  string
	resync time.Duration
}

// Reconcile starts the session a Session resource asks for (once: its
// UID is the idempotency key), mirrors its state into the status while it
// lives, and on deletion stops it and lets the resource go only once its
// audit log is sealed.
func (r *sessionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := object(SessionKind)
	if err := r.c.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	p := system(r.admin, u)
	id, _, _ := unstructured.NestedString(u.Object, "status", "sessionID")
	x, mine, err := r.started(ctx, p, u, id)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !mine {
		// The status names a session this resource did not start (it was
		// written by someone allowed to write statuses): it is not acted on.
		setCondition(u, "Started", "Forged", fmt.Errorf("status.sessionID %s names a session this resource did not start", id))
		unstructured.RemoveNestedField(u.Object, "status", "sessionID")
		if err := r.c.Status().Update(ctx, u); err != nil {
			return ctrl.Result{}, err
		}
		id, x = "", session.Session{}
	}
	if u.GetDeletionTimestamp() != nil {
		if id != "" {
			done, err := r.stop(ctx, p, u, id)
			if err != nil || !done {
				return ctrl.Result{RequeueAfter: time.Second}, err
			}
		}
		controllerutil.RemoveFinalizer(u, sealed)
		return ctrl.Result{}, r.c.Update(ctx, u)
	}
	if controllerutil.AddFinalizer(u, sealed) {
		return ctrl.Result{}, r.c.Update(ctx, u) // the update brings it back
	}
	if id == "" {
		agent, _, _ := unstructured.NestedString(u.Object, "spec", "agent")
		repo, _, _ := unstructured.NestedString(u.Object, "spec", "repository")
		message, _, _ := unstructured.NestedString(u.Object, "spec", "message")
		asker, err := r.users.principal(ctx, u)
		if err == nil {
			err = ensureProject(ctx, r.svc, asker, u.GetNamespace())
		}
		if err == nil {
			x, err = r.svc.Sessions().Create(ctx, asker, wire.CreateRequest{Project: u.GetNamespace(), Agent: agent, Repo: repo, Message: message,
				IdempotencyKey: "kubernetes/" + string(u.GetUID())})
		}
		if err != nil {
			setCondition(u, "Started", "Refused", err)
			_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
			if uerr := r.c.Status().Update(ctx, u); uerr != nil {
				return ctrl.Result{}, uerr
			}
			if errors.Is(err, errdefs.ErrInvalid) || errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, errdefs.ErrDenied) || errors.Is(err, errNoStamp) {
				return ctrl.Result{RequeueAfter: time.Minute}, nil // until the agent exists, say
			}
			return ctrl.Result{}, err
		}
		_ = unstructured.SetNestedField(u.Object, x.ID, "status", "sessionID")
		setCondition(u, "Started", "Started", nil)
	}
	if err := r.mirror(ctx, p, u, x); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.c.Status().Update(ctx, u); err != nil {
		return ctrl.Result{}, err
	}
	if x.Status.Terminal() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: r.resync}, nil
}

// stop stops session id (once) and says whether it is stopped and its
// audit log sealed.
func (r *sessionReconciler) stop(ctx context.Context, p identity.Principal, u *unstructured.Unstructured, id string) (bool, error) {
	x, err := r.svc.Sessions().Get(ctx, p, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	if !x.Status.Terminal() {
		payload, _ := json.Marshal(session.StopPayload{Reason: "its Session resource " + u.GetNamespace() + "/" + u.GetName() + " was deleted"})
		_, err := r.svc.Sessions().Send(ctx, p, id, wire.SendRequest{Kind: session.KindStop, Payload: payload, IdempotencyKey: "kubernetes-delete/" + string(u.GetUID())})
		if err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return false, err
		}
		return false, nil
	}
	// Ended without a seal (a failed session's log is sealed when the
	// collector takes its copy): sealed now, as the resource goes.
	return r.svc.Audit.SealEnded(ctx, p, id)
}

// mirror writes session x's state into u's status: where it is, what it
// waits on, what it consumed of its budget, and how much its copy differs
// from its base (from the last checkpoint: no copy is read).
func (r *sessionReconciler) mirror(ctx context.Context, p identity.Principal, u *unstructured.Unstructured, x session.Session) error {
	park := ""
	parks, err := r.svc.Gates().Parks(ctx, p, x.ID, true)
	if err != nil {
		return err
	}
	if len(parks) > 0 {
		park = parks[0].Reason
	}
	use, err := r.svc.Gates().Budget(ctx, p, x.ID)
	if err != nil {
		return err
	}
	c := use.Used
	diff := "no change"
	if cp, err := r.svc.Review().LastStep(ctx, p, x.ID); err == nil && len(cp.Files) > 0 {
		diff = fmt.Sprintf("%d file(s) changed (step %d)", len(cp.Files), cp.Number)
	} else if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	for field, v := range map[string]string{"status": string(x.Status), "runtimePhase": string(x.RuntimePhase), "ambientStatus": x.AmbientStatus,
		"delivery": x.Delivery, "parkReason": park, "diffSummary": diff} {
		_ = unstructured.SetNestedField(u.Object, v, "status", field)
	}
	budget := map[string]any{"actions": int64(c.Actions), "activeSeconds": int64(c.Active.Seconds()), "extensions": int64(c.Extensions),
		"tokens": c.Tokens, "turns": int64(c.Turns), "spendUsd": fmt.Sprintf("%.4f", c.SpendUSD)}
	return unstructured.SetNestedMap(u.Object, budget, "status", "budget")
}

// started returns session id (none: nothing, yes) and whether it is the
// one resource u started: in the namespace's project, requested through
// this resource.
func (r *sessionReconciler) started(ctx context.Context, p identity.Principal, u *unstructured.Unstructured, id string) (session.Session, bool, error) {
	if id == "" {
		return session.Session{}, true, nil
	}
	x, err := r.svc.Sessions().Get(ctx, p, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return x, false, nil
	} else if err != nil {
		return x, false, err
	}
	user, _ := strings.CutPrefix(u.GetAnnotations()[RequesterAnnotation], r.users.prefix)
	return x, x.Project == u.GetNamespace() && x.CreatedBy.Via == via(u) && x.CreatedBy.ID == user, nil
}
