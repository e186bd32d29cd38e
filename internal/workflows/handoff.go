package workflows

import (
	"github.com/paddock-dev/paddock/internal/durable"
	"go.temporal.io/sdk/workflow"
)

// HandoverWorkflow runs one hand-over (the diff, accept, reject) on the
// node holding the working copy. Temporal knows it as "DeliveryWorkflow",
// the name recorded histories use (HandoverName).
func HandoverWorkflow(ctx workflow.Context, d durable.Handover) (durable.HandoverResult, error) {
	w := &run{home: d.Home}
	var out durable.HandoverResult
	err := w.onCopy(short(ctx, 3), life.Deliver, d).Get(ctx, &out)
	return out, err
}

// HandoverName is HandoverWorkflow's registered name: start it by this
// name (a function would name it after itself).
const HandoverName = "DeliveryWorkflow"
