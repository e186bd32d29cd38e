package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// NoticeDelivery is the kind of a Notice that a trigger delivery waits in
// the session's held lane.
const NoticeDelivery session.CommandKind = "delivery"

// TriggerRef names a trigger on the server: PROJECT/NAME. A trigger, and
// the secret that signs its deliveries, belong to its project; two
// projects may each have a trigger of one name.
func TriggerRef(project, name string) string { return project + "/" + name }

// Flush says what a flush of held deliveries did.
type Flush struct {
	// Delivered is the command carrying them (empty: none were held).
	Delivered string `json:"delivered,omitempty"`
	// Interrupt says a turn in flight should stop so the steering lands
	// at once: some delivery is not a CI verdict.
	Interrupt bool `json:"interrupt,omitempty"`
}

// FlushDeliveries turns the session's held deliveries into one message
// command that lists each.
func (a Lifecycle) FlushDeliveries(ctx context.Context, sessionID string) (Flush, error) {
	held, err := a.Store.HeldDeliveries(ctx, sessionID)
	if err != nil || len(held) == 0 {
		return Flush{}, err
	}
	var all []session.Delivery
	interrupt := false
	var ids []string
	for _, c := range held {
		var p session.MessagePayload
		_ = json.Unmarshal(c.Payload, &p)
		all = append(all, p.Deliveries...)
		ids = append(ids, c.ID)
		for _, d := range p.Deliveries {
			interrupt = interrupt || !session.CIVerdict(d.Event)
		}
	}
	text := all[0].Message
	if len(all) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d events arrived together:\n", len(all))
		for i, d := range all {
			fmt.Fprintf(&b, "\n%d. [%s via %s] %s\n", i+1, d.Event, d.Trigger, d.Message)
		}
		text = b.String()
	}
	payload, _ := json.Marshal(session.MessagePayload{Message: text, Deliveries: all})
	c, err := a.Store.AbsorbDeliveries(ctx, ids, store.NewCommand{ID: "flush-" + held[0].ID, SessionID: sessionID, Kind: session.KindMessage,
		Payload: payload, Sender: held[0].Sender, IdempotencyKey: "flush:" + held[0].ID})
	var ended *errdefs.TerminalError
	if errors.As(err, &ended) {
		return Flush{}, nil // the session ended: its deliveries were canceled with it
	}
	if err != nil {
		return Flush{}, err
	}
	return Flush{Delivered: c.ID, Interrupt: interrupt}, nil
}

// CredentialAD binds a sealed credential to its session and name.
func CredentialAD(sessionID, name string) []byte {
	return []byte("paddock-credential-v1\n" + sessionID + "\n" + name)
}
