package session

import (
	"encoding/json"
	"strings"

	"github.com/paddock-dev/paddock/internal/clip"
)

// Returned says whether delegated session c is done with its task, and
// what it says (the end of it, at most max bytes). Done is: it ended, or
// its last turn settled (completed, failed, stale) with nothing left for
// it to do: no open park (it goes on when the park resolves), no command
// still to read. A turn waiting for the person's answer is not done.
// What it says is its last turn's text, after why it ended.
func Returned(c Session, turns []Turn, openParks int, cmds []Command, events []Event, max int) (done bool, text string) {
	switch {
	case c.Status == StatusFailed:
		return true, "it failed: " + c.Error
	case c.Status == StatusQueued || c.Status == StatusRunning:
		return false, ""
	case !c.Status.Terminal():
		if len(turns) == 0 || openParks > 0 {
			return false, ""
		}
		switch turns[len(turns)-1].Status {
		case TurnCompleted, TurnFailed, TurnStale:
		default:
			return false, ""
		}
		for _, cmd := range cmds {
			if cmd.State == CommandPending || cmd.State == CommandDispatching {
				return false, ""
			}
		}
	}
	var b strings.Builder
	if c.Status == StatusStopped {
		b.WriteString("it was stopped (" + c.StopReason + ")\n")
	}
	if len(turns) > 0 {
		last := turns[len(turns)-1]
		if last.Status != TurnCompleted && last.Error != "" {
			b.WriteString("its turn " + string(last.Status) + ": " + last.Error + "\n")
		}
		for _, e := range events {
			var d TextData
			if e.TurnID == last.ID && e.Kind == EventAssistantText && json.Unmarshal(e.Data, &d) == nil {
				b.WriteString(d.Text)
			}
		}
	}
	return true, clip.Tail(strings.TrimSpace(b.String()), max)
}
