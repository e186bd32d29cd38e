package secret

import (
	"encoding/base64"
	"encoding/hex"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Values masks known secret values (the credentials a session declared)
// wherever they appear in text: as they are, reversed, hex-, base64- (at
// any alignment, either alphabet) or percent-encoded; and, for a value
// that looks random (a token: twelve characters or more, no spaces, no
// URL, mixed characters), in pieces: any stretch of six characters of it
// (twelve of its hex, eight of its base64) holding two kinds of character
// is masked, so a token printed in parts, over several lines or several
// outputs, does not come through whole. Other transformations (rot13,
// base32, compression, a character per line) are not undone: masking is
// hygiene, the sandbox and its egress allowlist are the boundary. Make one
// with NewValues.
type Values struct {
	grams map[int]map[string][]int // gram length: text -> indices of names
	whole []form                   // forms shorter than their gram: matched whole
	names []string
}

type form struct {
	text string
	name int
}

// Lengths of the pieces masked, in characters of each form.
const (
	plainGram  = 6
	hexGram    = 12
	base64Gram = 8
	// minValue is the shortest value masked: shorter ones would mask
	// ordinary words.
	minValue = 4
)

// NewValues prepares the masking of values (by name).
func NewValues(values map[string]string) *Values {
	v := &Values{grams: map[int]map[string][]int{}}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		value := values[name]
		if len(value) < minValue {
			continue
		}
		i := len(v.names)
		v.names = append(v.names, name)
		// A value that is no token (a word, a URL, a short PIN) is masked
		// whole only: its pieces are ordinary text.
		pieces := tokenLike(value)
		gram := func(g int) int {
			if pieces {
				return g
			}
			return 1 << 30
		}
		v.add(value, gram(plainGram), i)
		v.add(reverse(value), gram(plainGram), i)
		v.add(hex.EncodeToString([]byte(value)), gram(hexGram), i)
		v.add(strings.ToUpper(hex.EncodeToString([]byte(value))), gram(hexGram), i)
		for _, core := range base64Cores(value) {
			v.add(core, gram(base64Gram), i)
			v.add(strings.NewReplacer("+", "-", "/", "_").Replace(core), gram(base64Gram), i)
		}
		if esc := url.QueryEscape(value); esc != value {
			v.add(esc, len(esc), i)
		}
	}
	return v
}

// add masks text's pieces of gram characters, or text whole when shorter.
func (v *Values) add(text string, gram, name int) {
	if len(text) < minValue {
		return
	}
	if len(text) <= gram {
		v.whole = append(v.whole, form{text, name})
		return
	}
	set := v.grams[gram]
	if set == nil {
		set = map[string][]int{}
		v.grams[gram] = set
	}
	for i := 0; i+gram <= len(text); i++ {
		g := text[i : i+gram]
		if kinds(g) < 2 {
			continue // "postgr", "000000": ordinary text
		}
		if !slices.Contains(set[g], name) {
			set[g] = append(set[g], name)
		}
	}
}

// base64Cores are the characters of value's base64 that depend on value
// alone, at each of the three alignments it may have inside a longer
// encoded text (what `echo "x=$TOKEN" | base64` prints holds one of them).
func base64Cores(value string) []string {
	var out []string
	for k := range 3 {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), value...))
		start := (k*8 + 5) / 6          // the characters holding bits of the k leading bytes
		end := (k + len(value)) * 8 / 6 // the characters whole within the value
		if end-start >= base64Gram {
			out = append(out, enc[start:end])
		}
	}
	return out
}

// tokenLike says a value looks random enough for its pieces to be its
// own: twelve characters or more, no space, no URL, two kinds of
// character at least.
func tokenLike(v string) bool {
	return len(v) >= 12 && !strings.ContainsAny(v, " \t\n") && !strings.Contains(v, "://") && kinds(v) >= 2
}

// kinds counts the kinds of character in s: lower case, upper case,
// digits, others.
func kinds(s string) int {
	var lower, upper, digit, other int
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = 1
		case r >= 'A' && r <= 'Z':
			upper = 1
		case r >= '0' && r <= '9':
			digit = 1
		default:
			other = 1
		}
	}
	return lower + upper + digit + other
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

type span struct {
	start, end int
	names      []int
}

// Mask returns text with every form of every value replaced by
// [REDACTED:credential NAMES].
func (v *Values) Mask(text string) string {
	if v == nil || len(v.names) == 0 {
		return text
	}
	var spans []span
	for gram, set := range v.grams {
		for i := 0; i+gram <= len(text); i++ {
			if names, ok := set[text[i:i+gram]]; ok {
				spans = append(spans, span{i, i + gram, names})
			}
		}
	}
	for _, f := range v.whole {
		for from := 0; ; {
			i := strings.Index(text[from:], f.text)
			if i < 0 {
				break
			}
			spans = append(spans, span{from + i, from + i + len(f.text), []int{f.name}})
			from += i + 1
		}
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	merged := []span{{spans[0].start, spans[0].end, slices.Clone(spans[0].names)}}
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end {
			last.end = max(last.end, sp.end)
			for _, n := range sp.names {
				if !slices.Contains(last.names, n) {
					last.names = append(last.names, n)
				}
			}
			continue
		}
		merged = append(merged, span{sp.start, sp.end, slices.Clone(sp.names)})
	}
	var b strings.Builder
	at := 0
	for _, sp := range merged {
		b.WriteString(text[at:sp.start])
		slices.Sort(sp.names)
		names := make([]string, len(sp.names))
		for i, n := range sp.names {
			names[i] = v.names[n]
		}
		b.WriteString(Marker + "credential " + strings.Join(names, ", ") + "]")
		at = sp.end
	}
	b.WriteString(text[at:])
	return b.String()
}
