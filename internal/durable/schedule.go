package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/wire"
)

// Triggerer delivers an event through a trigger (the Service).
type Triggerer interface {
	Trigger(ctx context.Context, project, name, event, key string, payload any) (wire.TriggerResult, error)
}

// Fire delivers one scheduled tick through its trigger (event
// "schedule"); the tick's time keys it, so a retried tick lands once.
func (a Lifecycle) Fire(ctx context.Context, trigger, tick string, at time.Time) error {
	if a.Triggers == nil {
		return nonRetryable(errors.New("this worker delivers no triggers"))
	}
	project, name, ok := strings.Cut(trigger, "/")
	if !ok {
		// A schedule started before triggers belonged to projects: the
		// server restarts it under its project's name at startup.
		return nonRetryable(fmt.Errorf("trigger %q: a schedule without its project; it is replaced at the next server start", trigger))
	}
	_, err := a.Triggers.Trigger(ctx, project, name, "schedule", "tick-"+tick, map[string]any{"scheduledAt": at.UTC().Format(time.RFC3339)})
	return err
}

// ScheduleID is the workflow ID of a trigger's (PROJECT/NAME) schedule.
func ScheduleID(trigger string) string { return "schedule/" + trigger }

func CronMemo(expr string) string {
	sum := sha256.Sum256([]byte(expr))
	return hex.EncodeToString(sum[:8])
}
