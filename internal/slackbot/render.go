package slackbot

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/slack-go/slack"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/shellcheck"
	"github.com/paddock-dev/paddock/internal/terminal"
)

// message is what is posted or edited: the notification text and the
// blocks shown.
type message struct {
	Text   string
	Blocks []slack.Block
}

// Slack's bounds: a section's text, the blocks of a message.
const (
	maxSection = 2900
	maxBlocks  = 45
)

// mrkdwn escapes text for Slack's markup: the three characters Slack
// reads as its own (so a model's "<!channel>" pings no one and a
// "<https://evil|docs>" is no link), every hidden character made
// visible as the terminal shows it.
func mrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(terminal.Visible(s, true))
}

func section(text string) slack.Block {
	if len(text) > maxSection {
		text = text[:maxSection] + "…"
	}
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}

func note(text string) slack.Block {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, text, false, false))
}

// verbatim is text shown as it is, in preformatted rich text (Slack
// reads no markup in it: backticks, mentions and links stay text), cut
// into blocks Slack takes.
func verbatim(text string) []slack.Block {
	var out []slack.Block
	for len(text) > 0 {
		n := min(len(text), maxSection)
		for n < len(text) && n > 0 && !isBoundary(text, n) {
			n--
		}
		if n == 0 {
			n = min(len(text), maxSection)
		}
		out = append(out, slack.NewRichTextBlock("", &slack.RichTextPreformatted{Type: slack.RTEPreformatted,
			Elements: []slack.RichTextSectionElement{slack.NewRichTextSectionTextElement(text[:n], nil)}}))
		text = text[n:]
	}
	return out
}

// isBoundary says a cut at n splits no character.
func isBoundary(s string, n int) bool { return n >= len(s) || s[n]&0xC0 != 0x80 }

func button(action, value, label, style string) *slack.ButtonBlockElement {
	b := slack.NewButtonBlockElement(action, value, slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
	if style != "" {
		b.Style = slack.Style(style)
	}
	return b
}

func linkTo(base, path, label string) string {
	if base == "" {
		return ""
	}
	return "<" + strings.TrimSuffix(base, "/") + path + "|" + label + ">"
}

// statusText is a thread's status message: the session's title, where it
// stands and what it is doing, and where to follow it on the web.
func statusText(x session.Session, web string) string {
	title := x.DisplayTitle
	if title == "" {
		title = "session " + x.ID
	}
	s := fmt.Sprintf("*%s* · %s", mrkdwn(terminal.OneLine(title, 150)), x.Status)
	if x.AmbientStatus != "" {
		s += " — " + mrkdwn(terminal.OneLine(x.AmbientStatus, 200))
	}
	if l := linkTo(web, "/sessions/"+x.ID, "open in Paddock"); l != "" {
		s += " · " + l
	}
	return s
}

func statusMessage(x session.Session, web string) message {
	t := statusText(x, web)
	return message{Text: t, Blocks: []slack.Block{section(t), note(fmt.Sprintf("Paddock session `%s` of agent %s in project %s · reply in this thread to steer it",
		x.ID, mrkdwn(x.Agent), mrkdwn(x.Project)))}}
}

// who decides a session's approvals, as the message says.
func deciders(x session.Session) string {
	if x.Approver != "" {
		return "only " + mrkdwn(x.Approver) + ", the session's named approver, may decide"
	}
	return "a member of project " + mrkdwn(x.Project) + " who may approve decides"
}

// fits says a call can be shown whole in one message: a person approves
// only what they can see.
func fits(blocks []slack.Block) bool { return len(blocks) <= maxBlocks-6 }

// approvalMessage asks for a decision on a call: the call in full (a
// command line by line, every argument, escaped as the terminal escapes
// it), the analysis piece by piece under the pinned policy, and the
// buttons; none to approve a call the policy refuses, nor one too long
// to show whole (the web app shows it).
func approvalMessage(x session.Session, d session.ToolCallData, pinned *policy.Policy, web string) message {
	head := fmt.Sprintf(":raising_hand: *%s* asks to run (rule %s):", mrkdwn(d.Name), mrkdwn(d.Rule))
	body := verbatim(terminal.CallText(d.Name, d.Args))
	blocks := []slack.Block{section(head)}
	refused := false
	if text := terminal.AnalysisText(pinned, d.Name, d.Args); text != "" {
		body = append(body, verbatim(text)...)
		refused = pinned.Evaluate(d.Name, d.Args).Verdict == shellcheck.Refuse
	}
	shown := fits(body)
	if shown {
		blocks = append(blocks, body...)
	} else {
		blocks = append(blocks, section(fmt.Sprintf("The call is too long to show whole here (%d parts): review it in the web app. %s",
			len(body), linkTo(web, "/inbox", "Open the inbox"))))
	}
	blocks = append(blocks, note(deciders(x)+" · "+linkTo(web, "/sessions/"+x.ID, "open in Paddock")))
	switch {
	case refused:
		blocks = append(blocks, section(":no_entry: The policy refuses a piece of this call: it cannot be approved."))
	case shown:
		approve := button(actionApprove, d.Approval, "Approve", "primary")
		approve.Confirm = slack.NewConfirmationBlockObject(slack.NewTextBlockObject(slack.PlainTextType, "Run this call?", false, false),
			slack.NewTextBlockObject(slack.PlainTextType, "It runs in the session's sandbox as shown above.", false, false),
			slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false), slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false))
		blocks = append(blocks, slack.NewActionBlock("approval", approve, button(actionReject, d.Approval, "Reject", "danger")))
	default:
		blocks = append(blocks, slack.NewActionBlock("approval", button(actionReject, d.Approval, "Reject", "danger")))
	}
	return message{Text: fmt.Sprintf("%s asks to run a call: approval needed", mrkdwn(d.Name)), Blocks: blocks}
}

// decidedMessage is an approval message once decided, anywhere: the
// call as it was, the decision and who took it where, no buttons.
func decidedMessage(d session.ToolCallData, ap session.Approval) message {
	var outcome string
	by := ""
	if ap.DecidedBy != nil {
		by = " by " + mrkdwn(ap.DecidedBy.ID) + via(ap.DecidedBy.Via)
	}
	switch ap.Status {
	case session.ApprovalApproved:
		outcome = ":white_check_mark: Approved" + by
	case session.ApprovalRejected:
		outcome = ":x: Rejected" + by
	case session.ApprovalExpired:
		outcome = ":hourglass: Expired: nobody decided in time, and the call did not run"
	default:
		outcome = ":grey_question: " + string(ap.Status)
	}
	if ap.Note != "" {
		outcome += ": " + mrkdwn(terminal.OneLine(ap.Note, 300))
	}
	blocks := []slack.Block{section(fmt.Sprintf("*%s* asked to run (rule %s):", mrkdwn(d.Name), mrkdwn(ap.Rule)))}
	body := verbatim(terminal.CallText(d.Name, ap.Args))
	if fits(body) {
		blocks = append(blocks, body...)
	}
	return message{Text: outcome, Blocks: append(blocks, section(outcome))}
}

// via names where a decision was taken.
func via(v string) string {
	switch {
	case strings.HasPrefix(v, "slack:"):
		return " in Slack"
	case strings.HasPrefix(v, "token:web"), strings.HasPrefix(v, "web"):
		return " in the web app"
	case v == "":
		return ""
	}
	return " (" + mrkdwn(v) + ")"
}

// parkMessage says what a parked session waits on, with the buttons for
// what can be given from Slack (an extension, a guest's start): a
// credential is never asked for here, only in the web app.
func parkMessage(x session.Session, p session.Park, web string) message {
	text := fmt.Sprintf(":double_vertical_bar: The session waits: *%s*. %s", mrkdwn(p.Reason), mrkdwn(p.Detail))
	if p.Needs != "" {
		text += "\nIt needs: " + mrkdwn(p.Needs)
	}
	blocks := []slack.Block{section(text)}
	switch bound.Reason(p.Reason) {
	case bound.AwaitingExtension:
		blocks = append(blocks, slack.NewActionBlock("park", button(actionExtend, p.ID, "Extend (+50 actions, +15 min)", "primary")))
	case bound.AwaitingStartApproval:
		blocks = append(blocks, slack.NewActionBlock("park", button(actionStart, p.ID, "Let it start", "primary"), button(actionRefuseStart, p.ID, "Refuse", "danger")))
	case bound.AwaitingCredentials, bound.AwaitingIdentity:
		if l := linkTo(web, "/sessions/"+x.ID, "Give it in the web app"); l != "" {
			blocks = append(blocks, section(l+" (never here: Slack keeps what is posted)"))
		}
	}
	blocks = append(blocks, note(deciders(x)))
	return message{Text: "The session waits: " + p.Reason, Blocks: blocks}
}

func resolvedPark(p session.Park) message {
	text := fmt.Sprintf("The session waited (%s): %s", mrkdwn(p.Reason), p.Resolution)
	if p.ResolvedBy != nil {
		text += " by " + mrkdwn(p.ResolvedBy.ID) + via(p.ResolvedBy.Via)
	}
	return message{Text: text, Blocks: []slack.Block{section(text)}}
}

// questionMessage asks the agent's question, each option a button.
func questionMessage(q session.Question) message {
	var blocks []slack.Block
	for qi, item := range q.Questions {
		if len(blocks) >= maxBlocks-3 {
			blocks = append(blocks, note("More questions wait in the web app."))
			break
		}
		blocks = append(blocks, section(":question: "+mrkdwn(item.Question)))
		var buttons []slack.BlockElement
		for oi, o := range item.Options {
			if len(buttons) == 25 {
				break
			}
			label := terminal.OneLine(o, 70)
			value := fmt.Sprintf("%s|%d|%d", q.ToolCallID, qi, oi)
			if len(value) > 2000 || len(blocks) >= maxBlocks-2 {
				break // Slack takes no longer value, no more blocks: the web app shows the rest
			}
			buttons = append(buttons, button(fmt.Sprintf("%s-%d-%d", actionAnswer, qi, oi), value, label, ""))
		}
		if len(buttons) > 0 {
			blocks = append(blocks, slack.NewActionBlock("", buttons...))
		}
		if len(item.Options) == 0 || item.AllowOther {
			blocks = append(blocks, note("Reply in this thread to answer in your own words."))
		}
	}
	return message{Text: "The agent asks a question", Blocks: blocks}
}

var failedRun = regexp.MustCompile(`\n?\[exit status (\d+)\]$`)

// turnMessage is one turn as a message: what was asked, what the agent
// said last, and every call it made (a command with its exit status).
func turnMessage(events []session.Event, end session.TurnData) message {
	var said string
	var calls []string
	final := map[string]session.ToolCallData{}
	var order []string
	for _, e := range events {
		switch e.Kind {
		case session.EventAssistantMessage:
			var m struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(e.Data, &m) == nil && strings.TrimSpace(m.Text) != "" {
				said = m.Text
			}
		case session.EventToolCall:
			var d session.ToolCallData
			if json.Unmarshal(e.Data, &d) != nil {
				continue
			}
			if _, ok := final[d.ID]; !ok {
				order = append(order, d.ID)
			}
			final[d.ID] = d
		}
	}
	if said == "" {
		for _, e := range events {
			if e.Kind == session.EventAssistantText {
				var d session.TextData
				_ = json.Unmarshal(e.Data, &d)
				said += d.Text
			}
		}
	}
	for _, id := range order {
		calls = append(calls, callLine(final[id]))
	}
	var blocks []slack.Block
	head := ":white_check_mark: Turn done"
	switch end.Status {
	case session.TurnCompleted:
	case session.TurnFailed:
		head = ":warning: Turn failed: " + mrkdwn(terminal.OneLine(end.Error, 300))
	default:
		head = ":black_square_for_stop: Turn " + string(end.Status)
		if end.Error != "" {
			head += ": " + mrkdwn(terminal.OneLine(end.Error, 300))
		}
	}
	if len(calls) > 0 {
		head += fmt.Sprintf(" · %d call%s", len(calls), map[bool]string{true: "", false: "s"}[len(calls) == 1])
	}
	blocks = append(blocks, section(head))
	if strings.TrimSpace(said) != "" {
		blocks = append(blocks, section(mrkdwn(said)))
	}
	const shown = 30
	if len(calls) > shown {
		calls = append(calls[:shown], fmt.Sprintf("… and %d more (see the session in Paddock)", len(calls)-shown))
	}
	if len(calls) > 0 {
		blocks = append(blocks, verbatim(strings.Join(calls, "\n"))...)
	}
	if len(blocks) > maxBlocks {
		blocks = blocks[:maxBlocks]
	}
	return message{Text: head, Blocks: blocks}
}

// callLine is one call in a line: its mark, its tool, what it ran, how
// it ended.
func callLine(d session.ToolCallData) string {
	mark, how := "✓", ""
	switch d.State {
	case session.CallDone:
		if m := failedRun.FindStringSubmatch(d.Result); m != nil && d.Name == "run_command" {
			mark, how = "✗", " (exit status "+m[1]+")"
		} else if d.Name == "run_command" {
			how = " (exit status 0)"
		}
	case session.CallErrored:
		mark, how = "✗", " (error: "+terminal.OneLine(d.Error, 120)+")"
	case session.CallRejected:
		mark, how = "⊘", " (refused: "+terminal.OneLine(d.Error, 120)+")"
	case session.CallCanceled:
		mark, how = "–", " (canceled)"
	default:
		mark, how = "…", " ("+string(d.State)+")"
	}
	what := terminal.OneLine(terminal.ArgsText(d.Args), 160)
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	if json.Unmarshal(d.Args, &a) == nil {
		switch {
		case a.Command != "":
			what = "$ " + terminal.OneLine(a.Command, 160)
		case a.Path != "":
			what = terminal.OneLine(a.Path, 160)
		}
	}
	return fmt.Sprintf("%s %s %s%s", mark, terminal.Visible(d.Name, false), what, how)
}

// finalMessage is a session's last word: how it ended, and its diff to
// review.
func finalMessage(x session.Session, web string) message {
	text := fmt.Sprintf(":checkered_flag: The session is %s.", x.Status)
	if x.Error != "" {
		text += " " + mrkdwn(terminal.OneLine(x.Error, 300))
	}
	if l := linkTo(web, "/sessions/"+x.ID+"/diff", "Review its changes"); l != "" {
		text += " " + l
	}
	return message{Text: text, Blocks: []slack.Block{section(text)}}
}

// idleMessage says a session is waiting for its next message, with its
// diff so far.
func idleMessage(x session.Session, web string) message {
	text := ":speech_balloon: Waiting for your next message: reply in this thread."
	if l := linkTo(web, "/sessions/"+x.ID+"/diff", "Review its changes so far"); l != "" {
		text += " " + l
	}
	return message{Text: text, Blocks: []slack.Block{section(text)}}
}

// linkHelp is told to a Slack user no Paddock user confirmed.
func linkHelp(code, web string) string {
	where := "in the Paddock web app's Administration page"
	if l := linkTo(web, "/admin#slack-h", "the Paddock web app"); l != "" {
		where = "in " + l
	}
	return fmt.Sprintf("You are not linked to a Paddock user yet, so nothing was done. To link this Slack account, run "+
		"`paddock slack link %s` as yourself, or enter the code %s, within %d minutes; then try again.", code, where, int(chat.CodeTTL.Minutes()))
}
