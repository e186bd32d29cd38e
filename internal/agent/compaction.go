package agent

import (
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

// Compacted shows msgs (the full conversation) as compaction c leaves it.
func Compacted(c session.Compaction, msgs []provider.Message) []provider.Message {
	if c.Messages < 2 || c.Messages > len(msgs) || msgs[0].Role != provider.RoleUser {
		return msgs
	}
	task := msgs[0]
	task.Text += fmt.Sprintf("\n\n[The earlier conversation (%d messages, %d of them yours) is summarized here; the rest follows as it was.]\n%s",
		c.Messages-1, c.Assistant, c.Summary)
	return append([]provider.Message{task}, msgs[c.Messages:]...)
}

// Tokens estimates the tokens of a conversation (about four bytes each).
func Tokens(msgs []provider.Message) int {
	b, _ := json.Marshal(msgs)
	return len(b) / 4
}

// Compact thresholds: a conversation past CompactAt of the context window
// is compacted, keeping a tail of about KeepTail of it.
const (
	CompactAt = 0.75
	KeepTail  = 0.25
)

// PlanCompaction says whether the full conversation msgs, shown as
// compacted by prev (nil for none), needs compacting for a window of
// window tokens, and where to cut: the messages before cut are to be
// summarized. The cut falls at the start of a model step (an assistant
// message), so no tool result is parted from its call, and keeps at least
// the latest step.
func PlanCompaction(msgs []provider.Message, prev *session.Compaction, window int) (cut int, ok bool) {
	shown := msgs
	if prev != nil {
		shown = Compacted(*prev, msgs)
	}
	if window <= 0 || float64(Tokens(shown)) <= CompactAt*float64(window) {
		return 0, false
	}
	tail := 0
	for i := len(msgs) - 1; i > 1; i-- {
		tail += Tokens(msgs[i : i+1])
		if msgs[i].Role != provider.RoleAssistant {
			continue
		}
		cut = i
		if float64(tail) >= KeepTail*float64(window) {
			break
		}
	}
	if cut < 2 || (prev != nil && cut <= prev.Messages) {
		return 0, false // nothing (new) to summarize
	}
	return cut, true
}

// SummaryRequest is what the model is asked to summarize: the messages
// before cut, as currently shown.
func SummaryRequest(msgs []provider.Message, prev *session.Compaction, cut int) []provider.Message {
	head := msgs[:cut]
	if prev != nil && prev.Messages <= cut {
		head = Compacted(*prev, head)
	}
	return append(append([]provider.Message{}, head...), provider.Message{Role: provider.RoleUser,
		Text: "The conversation is getting too long for the context window. Without calling any tool, summarize everything above for your own later use: the task, what was done (files read and changed, commands run and their outcomes), decisions and their reasons, and what remains. Be complete but concise."})
}

// Assistants counts the model's messages among msgs.
func Assistants(msgs []provider.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == provider.RoleAssistant {
			n++
		}
	}
	return n
}

// LatestCompaction is the latest compaction among events, if any.
func LatestCompaction(events []session.Event) *session.Compaction {
	var latest *session.Compaction
	for _, e := range events {
		if e.Kind == session.EventCompaction {
			var c session.Compaction
			if json.Unmarshal(e.Data, &c) == nil {
				latest = &c
			}
		}
	}
	return latest
}
