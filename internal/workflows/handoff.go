package workflows

import (
	"github.com/paddock-dev/paddock/internal/durable"
	"go.temporal.io/sdk/workflow"
)

// DeliveryWorkflow runs one delivery on the node holding the copy.
func DeliveryWorkflow(ctx workflow.Context, d durable.Delivery) (durable.Delivered, error) {
	w := &run{home: d.Home}
	var out durable.Delivered
	err := w.onCopy(short(ctx, 3), life.Deliver, d).Get(ctx, &out)
	return out, err
}
