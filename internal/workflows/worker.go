package workflows

import (
	"context"
	"time"

	"github.com/paddock-dev/paddock/internal/durable"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// NodeQueue is the task queue only node's worker polls: the activities
// that use a session's working copy go there while that node holds it.
func NodeQueue(node string) string { return TaskQueue + "/" + node }

// Worker runs session workflows and their activities from the task queue
// every node polls, and, when the node is named (Copies.Node), activities
// from its own NodeQueue. Every activity heartbeats while it runs, so one
// that was running on a worker that died is retried within
// HeartbeatTimeout, not after its whole time limit.
type Worker struct {
	workers []worker.Worker
}

// CachedSessions bounds the workflows a process keeps in memory between
// their tasks (the SDK's sticky cache, default 10,000): an idle session
// costs storage, not memory. One evicted and woken again replays its
// history, which continue-as-new keeps short.
const CachedSessions = 256

// BoundCache sizes the SDK's cache (CachedSessions). The cache is one per
// process, made with the size set when its first worker starts, and the
// embedded Temporal server starts workers of its own: a process embedding
// it calls this before starting it (else the cache keeps the SDK's
// default, every idle session's workflow in memory).
func BoundCache() { worker.SetStickyWorkflowCacheSize(CachedSessions) }

// NewWorker returns a worker (not started).
func NewWorker(c client.Client, acts *durable.Activities) *Worker {
	BoundCache()
	shared := worker.New(c, TaskQueue, worker.Options{
		Interceptors: []interceptor.WorkerInterceptor{&liveness{}},
		// A workflow task sent to a worker that died waits this long before
		// any worker may take it (default 5 s).
		StickyScheduleToStartTimeout: 2 * time.Second,
		MaxHeartbeatThrottleInterval: heartbeatEvery,
	})
	shared.RegisterWorkflow(SessionWorkflow)
	shared.RegisterWorkflow(ScheduleWorkflow)
	shared.RegisterWorkflow(SweepWorkflow)
	shared.RegisterWorkflowWithOptions(HandoverWorkflow, workflow.RegisterOptions{Name: HandoverName})
	Register(shared, acts)
	w := &Worker{workers: []worker.Worker{shared}}
	if acts.Copies != nil && acts.Copies.Node != "" {
		node := acts.Copies.Node
		own := worker.New(c, NodeQueue(node), worker.Options{Interceptors: []interceptor.WorkerInterceptor{&liveness{}}, DisableWorkflowWorker: true, MaxHeartbeatThrottleInterval: heartbeatEvery})
		Register(own, acts)
		w.workers = append(w.workers, own)
	}
	return w
}

// Registry is where activities are registered: a worker, or a test
// environment.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers every group of acts' activities with r. A group's
// method set holds the accessors of the others too (Activities.Turns…),
// which are no activities: they are skipped.
func Register(r Registry, acts *durable.Activities) {
	l, t, b := acts.Lifecycle(), acts.Turns(), acts.Budgets()
	for _, g := range []any{&l, &t, &b} { // Temporal takes a struct by pointer
		r.RegisterActivityWithOptions(g, activity.RegisterOptions{SkipInvalidStructFunctions: true})
	}
}

// Start starts polling.
func (w *Worker) Start() error {
	for i, x := range w.workers {
		if err := x.Start(); err != nil {
			for _, y := range w.workers[:i] {
				y.Stop()
			}
			return err
		}
	}
	return nil
}

// Stop stops polling and waits for the activities running to end.
func (w *Worker) Stop() {
	for _, x := range w.workers {
		x.Stop()
	}
}

// HeartbeatTimeout is how long an activity may go without a heartbeat
// before Temporal retries it elsewhere: the bound on resuming in-flight
// work after a crash.
const HeartbeatTimeout = 5 * time.Second

// heartbeatEvery is how often a running activity's heartbeat reaches the
// server. The SDK would batch heartbeats to 80% of HeartbeatTimeout,
// leaving a loaded machine one second of slack; every second leaves four,
// and an interrupt or stop reaches a running command within about a
// second. An attempt Temporal still gives up on keeps running and a later
// attempt collects its outcome (inflight).
const heartbeatEvery = time.Second

// liveness heartbeats every activity once a second while it runs.
type liveness struct {
	interceptor.WorkerInterceptorBase
}

func (*liveness) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &beating{}
	i.Next = next
	return i
}

type beating struct {
	interceptor.ActivityInboundInterceptorBase
}

func (b *beating) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	stop := durable.Heartbeat(ctx)
	defer stop()
	return b.Next.ExecuteActivity(ctx, in)
}
