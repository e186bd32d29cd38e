package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workflows"
)

// ErrNotParked says a session has no open park of the kind a request
// resolves.
var ErrNotParked = fmt.Errorf("not parked for that: %w", errdefs.ErrConflict)

// Extend grants a session parked on its budget an extension (or raises
// its spend cap), attributed to by and recorded, and wakes it: its held
// recovery command becomes due. When the session names an approver, only
// they may grant it.
func (s Gates) Extend(ctx context.Context, caller identity.Principal, id string, req wire.ExtendRequest) (session.Park, error) {
	if _, err := s.Sessions().For(ctx, caller, id, identity.Approve); err != nil {
		return session.Park{}, err
	}
	by := caller.Sender()
	if err := checkNote("note", req.Note); err != nil {
		return session.Park{}, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return session.Park{}, err
	}
	if x.Approver != "" && x.Approver != by.ID {
		return session.Park{}, fmt.Errorf("session %s names %s as its approver, not %s: %w", x.ID, x.Approver, by.ID, errdefs.ErrDenied)
	}
	reason := bound.AwaitingExtension
	if req.SpendCapUSD != 0 {
		if math.IsNaN(req.SpendCapUSD) || math.IsInf(req.SpendCapUSD, 0) || req.SpendCapUSD <= x.SpendCapUSD {
			return session.Park{}, fmt.Errorf("spendCapUsd %v: want more than the session's cap of $%.2f: %w", req.SpendCapUSD, x.SpendCapUSD, errdefs.ErrInvalid)
		}
		reason = bound.BillingSpendCapExceeded
	}
	p, err := s.openPark(ctx, id, reason)
	if err != nil {
		return p, err
	}
	d := session.BudgetData{Extension: reason == bound.AwaitingExtension, By: &by, Note: req.Note}
	key := "extension/" + p.ID
	if reason == bound.BillingSpendCapExceeded {
		if err := s.Store.RaiseSpendCap(ctx, id, req.SpendCapUSD); err != nil {
			return p, err
		}
		d.SpendCapUSD, key = req.SpendCapUSD, "spend-cap/"+p.ID
	}
	data, _ := json.Marshal(d)
	if _, err := s.Store.AppendEvent(ctx, session.Event{SessionID: id, Kind: session.EventBudget, Key: durable.BudgetPrefix + key, Data: data}); err != nil {
		return p, err
	}
	return s.resolve(ctx, p, session.ParkGranted, by, req.Note)
}

// Unpark resolves a session's open park on a condition outside Paddock
// (credits added, the provider back) as cleared, attributed to by, and
// wakes it.
func (s Gates) Unpark(ctx context.Context, caller identity.Principal, id, note string) (session.Park, error) {
	if _, err := s.Sessions().For(ctx, caller, id, identity.Approve); err != nil {
		return session.Park{}, err
	}
	by := caller.Sender()
	if err := checkNote("note", note); err != nil {
		return session.Park{}, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return session.Park{}, err
	}
	if x.Approver != "" && x.Approver != by.ID {
		return session.Park{}, fmt.Errorf("session %s names %s as its approver, not %s: %w", x.ID, x.Approver, by.ID, errdefs.ErrDenied)
	}
	open, err := s.Store.ListParks(ctx, id, true)
	if err != nil {
		return session.Park{}, err
	}
	for _, p := range open {
		switch bound.Reason(p.Reason) {
		case bound.BillingInsufficientCredits, bound.BillingSpendingLimitExceeded, bound.ProviderOutage:
			return s.resolve(ctx, p, session.ParkCleared, by, note)
		}
	}
	return session.Park{}, fmt.Errorf("session %s has no park on credits or the provider (an exhausted budget needs `paddock sessions extend`): %w", id, ErrNotParked)
}

func (s *Service) openPark(ctx context.Context, id string, reason bound.Reason) (session.Park, error) {
	open, err := s.Store.ListParks(ctx, id, true)
	if err != nil {
		return session.Park{}, err
	}
	for _, p := range open {
		if p.Reason == string(reason) {
			return p, nil
		}
	}
	return session.Park{}, fmt.Errorf("session %s is not parked %s: %w", id, reason, ErrNotParked)
}

func (s *Service) resolve(ctx context.Context, p session.Park, resolution string, by session.Sender, note string) (session.Park, error) {
	p, err := s.Store.ResolvePark(ctx, p.ID, resolution, &by, note)
	if err != nil {
		return p, err
	}
	return p, s.notify(ctx, p.SessionID, workflows.Notice{CommandID: p.RecoveryCommand, Kind: session.KindMessage})
}

// Parked lists the sessions that wait on someone (open parks, pending
// approvals, unanswered questions) among those of the projects where p
// may do a (identity.Read for a list, identity.Approve for an inbox).
func (s Gates) Parked(ctx context.Context, p identity.Principal, a identity.Action, f session.Filter) ([]wire.Parked, error) {
	var err error
	if f.Within, f.Scoped, err = s.Access.Readable(ctx, p, a); err != nil {
		return nil, err
	}
	// Only live sessions wait, and every one of them, however many
	// sessions came after it.
	f.Statuses, f.Limit, f.Before = []session.Status{session.StatusQueued, session.StatusRunning, session.StatusAwaiting}, 0, ""
	list, err := store.AllSessions(ctx, s.Store, f)
	if err != nil {
		return nil, err
	}
	pending, err := s.Store.ListApprovals(ctx, session.ApprovalFilter{Status: session.ApprovalPending})
	if err != nil {
		return nil, err
	}
	approvals := map[string]int{}
	for _, a := range pending {
		approvals[a.SessionID]++
	}
	out := []wire.Parked{}
	for _, x := range list {
		if x.Status.Terminal() {
			continue
		}
		open, err := s.Store.ListParks(ctx, x.ID, true)
		if err != nil {
			return nil, err
		}
		for _, p := range open {
			out = append(out, wire.Parked{Session: x, Reason: p.Reason, Needs: p.Needs, Detail: p.Detail})
		}
		if n := approvals[x.ID]; n > 0 {
			out = append(out, wire.Parked{Session: x, Reason: string(bound.AwaitingApproval), Needs: bound.Needs(bound.AwaitingApproval, x.ID),
				Detail: fmt.Sprintf("%d pending approval(s)", n)})
		}
		if turns, err := s.Store.ListTurns(ctx, x.ID); err == nil && len(turns) > 0 && turns[len(turns)-1].Status == session.TurnWaitingForInput {
			out = append(out, wire.Parked{Session: x, Reason: string(bound.AwaitingAnswer), Needs: bound.Needs(bound.AwaitingAnswer, x.ID)})
		}
	}
	return out, nil
}

// Hold freezes a session for inspection, as by: no turn starts, nothing
// is reaped, discarded or collected until Release.
func (s Sessions) Hold(ctx context.Context, caller identity.Principal, id, reason string) (session.Session, error) {
	if _, err := s.Sessions().For(ctx, caller, id, identity.Steer); err != nil {
		return session.Session{}, err
	}
	by := caller.Sender()
	if err := checkNote("reason", reason); err != nil {
		return session.Session{}, err
	}
	if err := s.Store.SetHold(ctx, id, &session.Hold{By: by, Reason: reason, At: s.now().UTC()}); err != nil {
		return session.Session{}, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil || x.Status.Terminal() {
		return x, err
	}
	// Woken, the workflow finds it frozen and disarms its timers.
	return x, s.notify(ctx, id, workflows.Notice{})
}

// Release ends a hold and wakes the session.
func (s Sessions) Release(ctx context.Context, caller identity.Principal, id string) (session.Session, error) {
	if _, err := s.Sessions().For(ctx, caller, id, identity.Steer); err != nil {
		return session.Session{}, err
	}
	if err := s.Store.SetHold(ctx, id, nil); err != nil {
		return session.Session{}, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil || x.Status.Terminal() {
		return x, err
	}
	return x, s.notify(ctx, id, workflows.Notice{})
}

// Waive records that a person waived the session's delivery requirement
// (its work need not be accepted before it completes), with the reason.
func (s Sessions) Waive(ctx context.Context, caller identity.Principal, id, reason string) (session.Session, error) {
	if _, err := s.Sessions().For(ctx, caller, id, identity.Approve); err != nil {
		return session.Session{}, err
	}
	by := caller.Sender()
	if err := checkNote("reason", reason); err != nil {
		return session.Session{}, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return x, err
	}
	if strings.TrimSpace(reason) == "" {
		return x, fmt.Errorf("%w: waiving a delivery requirement needs a reason (it is recorded)", errdefs.ErrInvalid)
	}
	if err := s.Store.Deliver(ctx, id, x.BaseCommit, x.BaseCommit, session.DeliveryWaived, by, reason); err != nil {
		return x, err
	}
	return s.Store.GetSession(ctx, id)
}

// checkNote bounds a note or reason a person writes (session.MaxReason),
// whatever transport brought it.
func checkNote(name, text string) error {
	if err := session.Limit(name, text, session.MaxReason); err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	return nil
}
