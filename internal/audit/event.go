package audit

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/internal/session"
)

// FromEvent is the audit entry of a transcript event of session x, not
// yet linked: who or what acted, what happened as metadata (never the
// text of an instruction, a file, a command's output or a model's
// message: those are only digested). The session's first event is its
// frame: the agent, its version, the pinned policy, the instruction's
// digest and who created it.
func FromEvent(x session.Session, e session.Event) Entry {
	en := Entry{Session: x.ID, Seq: e.Seq, Time: e.CreatedAt, Project: x.Project, Kind: string(e.Kind), Digest: Digest(e.Data),
		Identity: "system:paddock", Meta: map[string]string{"key": e.Key}}
	m := en.Meta
	if e.TurnID != "" {
		m["turn"] = e.TurnID
	}
	sender := func(s *session.Sender) {
		if s != nil && s.Kind != "" {
			en.Identity = s.String()
			m["authenticatedBy"] = s.Via
		}
	}
	switch e.Kind {
	case session.EventStatus:
		var d session.StatusData
		_ = json.Unmarshal(e.Data, &d)
		m["status"], m["phase"] = string(d.Status), string(d.RuntimePhase)
		if d.Error != "" {
			m["error"] = Digest([]byte(d.Error))
		}
	case session.EventCommand:
		var d session.CommandData
		_ = json.Unmarshal(e.Data, &d)
		sender(&d.Sender)
		m["command"], m["commandKind"], m["state"] = d.ID, string(d.Kind), string(d.State)
	case session.EventUserMessage, session.EventNotice, session.EventAnswer:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		sender(d.Sender)
		// A message's files by their digests alone.
		var files []string
		for _, a := range d.Attachments {
			files = append(files, a.Digest)
		}
		if len(files) > 0 {
			m["attachments"] = strings.Join(files, ",")
		}
	case session.EventToolCall:
		var d session.ToolCallData
		_ = json.Unmarshal(e.Data, &d)
		en.Identity = "model"
		m["call"], m["tool"], m["state"] = d.ID, d.Name, string(d.State)
		m["policy"] = x.PolicyDigest
		if d.Verdict != "" {
			m["verdict"], m["rule"] = d.Verdict, d.Rule
		}
		if d.Approval != "" {
			m["approval"] = d.Approval
		}
		if d.Child != "" {
			m["child"] = d.Child // the session a delegate call started
		}
		if d.By != nil {
			en.Identity = d.By.Kind + ":" + d.By.By + d.By.Rule
			m["decision"] = d.By.Kind
			if d.By.Via != "" {
				m["authenticatedBy"] = d.By.Via
			}
		}
		if len(d.Args) > 0 {
			m["args"] = Digest(d.Args)
			// The file a file tool reads or modifies is metadata.
			var a struct {
				Path string `json:"path"`
			}
			if json.Unmarshal(d.Args, &a) == nil && a.Path != "" && len(a.Path) <= 1024 {
				m["path"] = a.Path
			}
		}
		if d.State == session.CallDone && d.Name == "run_command" {
			m["exit"] = "0"
			if s := exitStatus().FindStringSubmatch(d.Result); s != nil {
				m["exit"] = s[1]
			}
		}
	case session.EventNetwork:
		var d session.NetworkData
		_ = json.Unmarshal(e.Data, &d)
		en.Identity = "sandbox"
		m["host"], m["port"], m["allowed"] = d.Host, strconv.Itoa(d.Port), strconv.FormatBool(d.Allowed)
		m["reason"], m["up"], m["down"], m["ms"] = d.Reason, strconv.FormatInt(d.BytesUp, 10), strconv.FormatInt(d.BytesDown, 10), strconv.FormatInt(d.DurationMs, 10)
	case session.EventPark:
		var d session.ParkData
		_ = json.Unmarshal(e.Data, &d)
		m["park"], m["reason"], m["resolution"] = d.Park.ID, d.Park.Reason, d.Park.Resolution
		sender(d.Park.ResolvedBy)
	case session.EventBudget:
		var d session.BudgetData
		_ = json.Unmarshal(e.Data, &d)
		m["actions"], m["activeMs"] = strconv.Itoa(d.Actions), strconv.FormatInt(d.ActiveMs, 10)
		if d.Extension {
			m["extension"] = "granted"
		}
		if d.SpendCapUSD > 0 {
			m["spendCapUsd"] = strconv.FormatFloat(d.SpendCapUSD, 'f', -1, 64)
		}
		sender(d.By)
	case session.EventPhase:
		var d session.PhaseData
		_ = json.Unmarshal(e.Data, &d)
		m["phase"], m["ms"] = string(d.Phase), strconv.FormatInt(d.DurationMs, 10)
	default:
		// Model output (text, complete messages, compactions): the model's.
		if e.Kind == session.EventAssistantText || e.Kind == session.EventAssistantMessage || e.Kind == session.EventCompaction {
			en.Identity = "model"
		}
	}
	if e.Seq == 1 {
		// The frame, written with the session, before its first act.
		m["frame"] = "true"
		m["agent"], m["agentVersion"], m["sessionPolicy"] = x.Agent, x.AgentVersion, x.PolicyDigest
		m["instruction"] = Digest([]byte(x.Input))
		m["interactive"] = strconv.FormatBool(x.Interactive)
		m["createdBy"] = x.CreatedBy.String()
		if parent, call := x.Delegated(); parent != "" {
			m["parent"], m["delegatedBy"] = parent, call
		}
		m["createdVia"] = x.CreatedBy.Via
		m["approver"] = x.Approver
	}
	for k, v := range m {
		if v == "" {
			delete(m, k)
		}
	}
	return en
}

var exitStatus = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[exit status (\d+)\]\s*$`) })
