package durable

// The activities, grouped by what they do. Each group is a view of the one
// Activities (its dependencies); Temporal knows each activity by its
// method's name, whatever its group, so recorded histories still replay.

// Lifecycle are the activities of a session's life around its turns:
// provision, claim a batch, settle, stop, fail, reap, rehydrate, the
// hand-over between nodes, triggers' deliveries and ticks, the sweep.
type Lifecycle struct{ *Activities }

// Turns are the activities of one turn: the model's steps, each tool
// call's gate, approval and run, and the turn's end.
type Turns struct{ *Activities }

// Budgets are the activities that keep a session within its budgets:
// check, park and its expiry, the final summary, the end for budget.
type Budgets struct{ *Activities }

// Lifecycle is the session's life's activities.
func (a *Activities) Lifecycle() Lifecycle { return Lifecycle{a} }

// Turns is a turn's activities.
func (a *Activities) Turns() Turns { return Turns{a} }

// Budgets is the budgets' activities.
func (a *Activities) Budgets() Budgets { return Budgets{a} }
