package kube

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// sweeper stops live sessions started through a Session resource that is
// gone (its finalizer removed by hand, or the resource replaced by another
// of the same name): no session runs on without the resource that asked
// for it. It runs with the controller, one node at a time.
type sweeper struct {
	c      client.Client
	svc    *engine.Service
	admin  string
	every  time.Duration
	logger *slog.Logger
}

// Start sweeps every s.every until ctx ends (a manager.Runnable).
func (s *sweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := s.sweep(ctx); err != nil && ctx.Err() == nil {
				s.logger.Warn("stopping sessions whose Session resource is gone", "err", err)
			}
		}
	}
}

// sessionVia parses "kubernetes:Session/NS/NAME".
func sessionVia(via string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(via, "kubernetes:Session/")
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// sweep sends a stop to each orphaned session once, and says how many.
func (s *sweeper) sweep(ctx context.Context) (int, error) {
	n := 0
	live := session.Filter{Statuses: []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}, IncludeArchived: true}
	list, err := s.svc.Sessions().All(ctx, identity.Principal{User: s.admin, Admin: true, Via: "kubernetes:sweep"}, live)
	if err != nil {
		return n, err
	}
	for _, x := range list {
		key, ok := sessionVia(x.CreatedBy.Via)
		if !ok {
			continue
		}
		u := object(SessionKind)
		err := s.c.Get(ctx, key, u)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return n, err
		default:
			id, _, _ := unstructured.NestedString(u.Object, "status", "sessionID")
			if id == "" || id == x.ID || u.GetDeletionTimestamp() != nil {
				continue // its own, being started, or being deleted (the reconciler stops it)
			}
		}
		payload, _ := json.Marshal(session.StopPayload{Reason: "its Session resource " + key.String() + " is gone"})
		p := identity.Principal{User: s.admin, Admin: true, Via: x.CreatedBy.Via + ":gone"}
		_, err = s.svc.Sessions().Send(ctx, p, x.ID, wire.SendRequest{Kind: session.KindStop, Payload: payload, IdempotencyKey: "kubernetes-gone/" + x.ID})
		if err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return n, err
		}
		n++
		s.logger.Info("stopping a session whose Session resource is gone", "session", x.ID, "resource", key.String())
	}
	return n, nil
}
