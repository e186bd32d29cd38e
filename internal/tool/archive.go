package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/internal/session"
)

// ArchiveSession is the name of the tool an agent archives its own session with.
const ArchiveSession = "archive_session"

// Archive asks the engine to archive the current session.
type Archive struct {
	Handoff string `json:"handoff,omitempty"`
}

var archiveSession = Tool{
	Name:   ArchiveSession,
	Schema: json.RawMessage(`{"type":"object","properties":{"handoff":{"type":"string","maxLength":20000}},"additionalProperties":false}`),
	run: func(_ context.Context, _ Env, raw json.RawMessage) (Result, error) {
		var a Archive
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if n := len([]rune(a.Handoff)); n > session.MaxHandoff {
			return Result{}, fmt.Errorf("%w: handoff has %d characters, at most %d", ErrArgs, n, session.MaxHandoff)
		}
		return Result{Output: "session archived; a new message will revive it", Archive: &a}, nil
	},
}
