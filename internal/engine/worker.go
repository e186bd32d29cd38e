package engine

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
)

// NewWorker returns a worker (not started) that runs session workflows and
// their activities. Every activity heartbeats while it runs, so one that
// was running on a worker that died is retried within HeartbeatTimeout,
// not after its whole time limit.
func NewWorker(c client.Client, acts *Activities) worker.Worker {
	w := worker.New(c, TaskQueue, worker.Options{
		Interceptors: []interceptor.WorkerInterceptor{&liveness{}},
		// A workflow task sent to a worker that died waits this long before
		// any worker may take it (default 5 s).
		StickyScheduleToStartTimeout: 2 * time.Second,
	})
	w.RegisterWorkflow(SessionWorkflow)
	w.RegisterWorkflow(ScheduleWorkflow)
	w.RegisterWorkflow(SweepWorkflow)
	w.RegisterActivity(acts)
	return w
}

// HeartbeatTimeout is how long an activity may go without a heartbeat
// before Temporal retries it elsewhere: the bound on resuming in-flight
// work after a crash.
const HeartbeatTimeout = 5 * time.Second

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
	stop := heartbeat(ctx)
	defer stop()
	return b.Next.ExecuteActivity(ctx, in)
}
