// Package clip shortens what a message quotes: a name, a path or a value
// a caller sent is quoted up to a bound, "…" marking the cut, which never
// falls inside a character; an ID or a hash is shown by its first twelve
// characters, as git shows commits.
package clip

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// String is s up to max bytes, with "…" after it when it was longer.
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Tail is the last max bytes of s at most, with "…" before them when it
// was longer (the end of a report, of an output).
func Tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// ID is the first twelve characters of an ID or hash.
func ID(s string) string { return s[:min(12, len(s))] }

// Bytes is a byte count as a person reads it: 512 B, 1.5 KiB, 3.0 GiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTPE"[exp]) + "iB"
}

// TailWriter keeps the last Max bytes written to it (a command's output, say);
// String is them as text, cut at a line when more was written.
type TailWriter struct {
	Max int
	mu  sync.Mutex
	buf []byte
	cut bool
}

func (t *TailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *TailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.ToValidUTF8(string(t.buf), "�")
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = "[…]\n" + s
	}
	return strings.TrimRight(s, "\n")
}
