package terminal

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Visible is the one rule for printing text that came from an agent, a
// command, a file or a file name: nothing in it is interpreted by the
// terminal. Control characters (C0, DEL, C1: ESC, BEL, OSC and CSI
// introducers among them), format characters (bidi overrides and
// isolates, zero-width characters, BOM), line and paragraph separators
// and bytes that are not UTF-8 are written as escapes (\x1b, \u202e,
// \xff). With lines, newlines and tabs are kept as they are; without,
// they are escaped too (\n, \t), so one value is one line.
func Visible(s string, lines bool) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return Hidden(r, lines) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !Hidden(r, lines):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += max(size, 1)
	}
	return b.String()
}

// Hidden: a character a terminal would act on or show as nothing.
func Hidden(r rune, lines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r) // bidi controls, zero-width characters, BOM, soft hyphen
}

// OneLine prints a value on one line, escaped, cut after n characters
// with the number of characters left out.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(Visible(s, true)), " ")
	if c := utf8.RuneCountInString(s); c > n {
		cut := []rune(s)[:max(n-1, 1)]
		return string(cut) + fmt.Sprintf("… (+%d more characters)", c-len(cut))
	}
	return s
}

// outputLine prints one line of a command's output escaped, its spacing
// kept (indentation, columns), cut after n characters with the number
// left out.
func outputLine(s string, n int) string {
	s = Visible(strings.TrimRight(s, "\r"), true) // tabs kept: they move, never hide
	if c := utf8.RuneCountInString(s); c > n {
		cut := []rune(s)[:max(n-1, 1)]
		return string(cut) + fmt.Sprintf("… (+%d more characters)", c-len(cut))
	}
	return s
}

// CallText is a tool call's arguments in full, for a person deciding on
// it: a command as its lines (numbered when there are several), every
// other argument on its own line, each value escaped, nothing cut.
func CallText(tool string, args json.RawMessage) string {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return "    " + Visible(string(args), true)
	}
	var b strings.Builder
	if cmd, ok := m["command"].(string); ok && tool == "run_command" {
		ls := strings.Split(cmd, "\n")
		for i, l := range ls {
			if len(ls) > 1 {
				fmt.Fprintf(&b, "    %3d │ %s\n", i+1, Visible(l, false))
			} else {
				fmt.Fprintf(&b, "    $ %s\n", Visible(l, false))
			}
		}
		delete(m, "command")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if old, ok := m["old"].(string); ok && tool == "edit_file" {
		// The edit as a diff: what goes, what comes.
		fmt.Fprintf(&b, "    the edit:\n")
		for _, l := range strings.Split(old, "\n") {
			fmt.Fprintf(&b, "      - %s\n", Visible(l, false))
		}
		if nw, ok := m["new"].(string); ok {
			for _, l := range strings.Split(nw, "\n") {
				fmt.Fprintf(&b, "      + %s\n", Visible(l, false))
			}
			delete(m, "new")
		}
		delete(m, "old")
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "old" || k == "new" })
	}
	for _, k := range keys {
		v, ok := m[k].(string)
		if !ok {
			raw, _ := json.Marshal(m[k])
			v = string(raw)
		}
		if strings.Contains(k, "path") {
			if flagged, why := workspace.Flag(v); flagged {
				fmt.Fprintf(&b, "    ⚑ %s is a %s: review with care\n", Visible(v, false), why)
			}
		}
		// A path or a name is one line, its newlines escaped (a file
		// name with a newline is one name); texts are shown as lines.
		if strings.Contains(v, "\n") && !strings.Contains(k, "path") && !strings.Contains(k, "name") {
			fmt.Fprintf(&b, "    %s:\n", Visible(k, false))
			for _, l := range strings.Split(v, "\n") {
				fmt.Fprintf(&b, "      │ %s\n", Visible(l, false))
			}
			continue
		}
		fmt.Fprintf(&b, "    %s: %s\n", Visible(k, false), Visible(v, false))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// AnalysisText is a command's analysis piece by piece, as the gate sees
// it under pinned: each piece's verdict, rule, reason and the rule's
// source, escaped; "" for a call that is not a command.
func AnalysisText(pinned *policy.Policy, tool string, args json.RawMessage) string {
	if pinned == nil || tool != policy.ShellTool {
		return ""
	}
	d := pinned.Evaluate(tool, args)
	var b strings.Builder
	fmt.Fprintf(&b, "  the analysis, piece by piece (under the session's pinned policy %s):\n", d.PolicyDigest)
	for _, p := range d.Pieces {
		fmt.Fprintf(&b, "    %-6s %-24s %s: %s [%s]\n", p.Verdict, Visible(p.Rule, false), OneLine(p.Command, 120), Visible(p.Reason, false), Visible(p.Source, false))
	}
	if len(d.Pieces) == 0 {
		fmt.Fprintf(&b, "    %-6s %-24s %s\n", d.Verdict, Visible(d.Rule, false), Visible(d.Reason, false))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ArgsText is a call's arguments as compact JSON for one line, without
// the HTML escaping of encoding/json (a > in a command stays a >).
func ArgsText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
