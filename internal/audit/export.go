package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Formats entries are exported in.
const (
	FormatJSONL = "jsonl"
	FormatCEF   = "cef"
)

// Export writes entries in format: one JSON object per line (jsonl), or
// ArcSight Common Event Format lines (cef) that SIEMs ingest.
func Export(w io.Writer, format, version string, entries []Entry) error {
	for _, e := range entries {
		line, err := Line(e, format, version)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// CEF is the entry as one Common Event Format line.
func CEF(e Entry, version string) string {
	msg := e.MetaPairs()
	ext := []string{
		"rt=" + fmt.Sprint(e.Time.UnixMilli()),
		"suser=" + cefValue(e.Identity),
		"cs1Label=session", "cs1=" + cefValue(e.Session),
		"cs2Label=project", "cs2=" + cefValue(e.Project),
		"cn1Label=seq", "cn1=" + fmt.Sprint(e.Seq),
		"cs3Label=hash", "cs3=" + e.Hash,
		"cs4Label=prev", "cs4=" + e.Prev,
		"cs5Label=digest", "cs5=" + e.Digest,
		"msg=" + cefValue(strings.Join(msg, " ")),
	}
	severity := "3"
	switch e.Meta["state"] {
	case "rejected", "errored":
		severity = "6"
	}
	if e.Meta["allowed"] == "false" {
		severity = "7"
	}
	return fmt.Sprintf("CEF:0|Paddock|paddock|%s|%s|%s|%s|%s", cefHeader(version), cefHeader(e.Kind), cefHeader(e.Kind), severity, strings.Join(ext, " "))
}

// cefHeader escapes a CEF header field (backslash and pipe).
func cefHeader(s string) string {
	return strings.NewReplacer(`\`, `\\`, `|`, `\|`, "\n", " ", "\r", " ").Replace(s)
}

// cefValue escapes a CEF extension value (backslash, equals, newlines).
func cefValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `=`, `\=`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// Line is one entry in format, without its line break.
func Line(e Entry, format, version string) (string, error) {
	switch format {
	case FormatJSONL:
		b, err := json.Marshal(e)
		return string(b), err
	case FormatCEF:
		return CEF(e, version), nil
	}
	return "", fmt.Errorf("audit export: format %q: want jsonl or cef", format)
}

// syslogPRI is facility authpriv (10), severity informational (6).
const syslogPRI = 10*8 + 6

// Syslog frames msg (an exported line) as an RFC 5424 message for syslog
// over TCP with octet counting (RFC 6587): "LEN <86>1 TIME HOST paddock -
// audit - MSG". The timestamp is the entry's; host is the sender's name.
func Syslog(e Entry, host, msg string) []byte {
	if host == "" {
		host = "-"
	}
	body := fmt.Sprintf("<%d>1 %s %s paddock - audit - %s", syslogPRI, e.Time.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), host, msg)
	return []byte(fmt.Sprintf("%d %s", len(body), body))
}

// MetaPairs is the entry's metadata as KEY=VALUE, sorted by key.
func (e Entry) MetaPairs() []string {
	out := make([]string, 0, len(e.Meta))
	for _, k := range slices.Sorted(maps.Keys(e.Meta)) {
		out = append(out, k+"="+e.Meta[k])
	}
	return out
}
