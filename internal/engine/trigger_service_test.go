package engine

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// signals is a Temporal client that only records SignalWithStart.
type signals struct {
	client.Client
	mu sync.Mutex
	n  int
}

func (s *signals) SignalWithStartWorkflow(context.Context, string, string, any, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return nil, nil
}

func (f *fixture) service(t *testing.T, agents ...spec.Agent) *Service {
	t.Helper()
	var recs []spec.Record
	for _, a := range agents {
		a.Defaults()
		recs = append(recs, spec.Record{Project: a.Project, Name: a.Name, Spec: a.JSON(), Digest: a.Digest(), Concurrency: a.Concurrency})
	}
	_, err := f.st.ApplyAgents(context.Background(), recs)
	require.NoError(t, err)
	return &Service{Store: f.st, Access: &access.Service{Store: f.st}, Temporal: &signals{}, Providers: f.acts.Providers, Tools: f.acts.Tools, Copies: f.acts.Copies}
}

func steered(repo string) spec.Agent {
	return spec.Agent{Name: "steered", Project: "default", Model: "replay/testdata/script.yaml", Concurrency: 1,
		Tools: []string{"read_file"}, Triggers: []spec.TriggerSpec{{Name: "hook", Message: "{{.event}}", Repo: repo}}}
}

// TestRegressionConcurrentDeliveriesToASingletonWithNoLiveSession: a singleton
// agent (session routing) with no live session gets a burst of
// deliveries at once (GitHub sends several events for one push): each
// finds no live session and spawns; all but one fail on the agent's slot.
func TestRegressionConcurrentDeliveriesToASingletonWithNoLiveSession(t *testing.T) {
	// The race is real but not certain in one round: try a few.
	for round := range 30 {
		f := setup(t)
		s := f.service(t, steered(f.repo))
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Sessions().Trigger(context.Background(), "default", "hook", "github.push", "k"+string(rune('a'+i)), map[string]any{})
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			var slot *errdefs.SlotConflictError
			if err != nil {
				require.True(t, errors.As(err, &slot), "%v", err)
				t.Fatalf("round %d: a delivery was refused instead of routed into the session another delivery spawned: %v", round, err)
			}
		}
	}
}

// TestRegressionCallerKeyPreemptsADelivery: the platform keys a spawned
// session "trigger:NAME:KEY" and a routed command "delivery:NAME:KEY",
// but a caller may use those keys (only "retry:" and "successor:" are
// reserved): a caller's message keyed like the next delivery swallows it.
func TestRegressionCallerKeyPreemptsADelivery(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s := f.service(t, steered(f.repo))
	x, err := s.Sessions().Create(ctx, identity.Principal{User: "t", Admin: true}, wire.CreateRequest{Agent: "steered", Repo: f.repo, Message: "start"})
	require.NoError(t, err)
	_, err = s.Sessions().Send(ctx, identity.Principal{User: "t", Admin: true}, x.ID, wire.SendRequest{Kind: session.KindMessage, Payload: []byte(`{"message":"hello"}`), IdempotencyKey: "delivery:hook:gh-1"})
	require.ErrorIs(t, err, errdefs.ErrInvalid, "a caller may not use the platform's delivery key space")
	_, err = s.Sessions().Create(ctx, identity.Principal{User: "t", Admin: true}, wire.CreateRequest{Agent: "steered", Repo: f.repo, Message: "x", IdempotencyKey: "trigger:hook:gh-2"})
	require.ErrorIs(t, err, errdefs.ErrInvalid)
	res, err := s.Sessions().Trigger(ctx, "default", "hook", "github.push", "gh-1", map[string]any{})
	require.NoError(t, err)
	require.NotEmpty(t, res.CommandID)
}

// TestRegressionExtendATerminalSession: a session stopped while parked keeps
// its open park; extending it is answered 200, records an extension and
// moves its recovery command to pending in a stopped session.
func TestRegressionExtendATerminalSession(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s := f.service(t)
	f.session(t, "s1", "default")
	_, err := f.acts.Budgets().Park(ctx, "s1", "", bound.AwaitingExtension, "budget")
	require.NoError(t, err)
	require.NoError(t, f.st.StopSession(ctx, "s1", session.StopPayload{Reason: "enough"}))
	p, err := s.Gates().Extend(ctx, identity.Principal{User: "ana", Admin: true}, "s1", wire.ExtendRequest{})
	cmds, _ := f.st.ListCommands(ctx, "s1")
	for _, c := range cmds {
		t.Logf("command %s %s", c.ID, c.State)
	}
	require.Error(t, err, "extended a stopped session: park %s %s", p.ID, p.Resolution)
}
