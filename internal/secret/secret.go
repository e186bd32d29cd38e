// Package secret finds credentials in text with gitleaks' rule set (cloud
// keys, tokens, private keys, and so on: over two hundred maintained rules)
// plus Paddock's rule for passwords in URLs, and redacts them: each secret
// becomes [REDACTED:RULE]. Store wraps a store so that nothing it is handed
// reaches disk with a secret in clear text.
package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	stdregexp "regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/regexp"
)

// URLPassword is the rule Paddock adds to gitleaks' set: the password of a
// URL's userinfo (scheme://user:password@host), which gitleaks leaves to
// service-specific rules.
const URLPassword = "url-password"

// Marker is what a redacted secret is replaced with: "[REDACTED:" + rule + "]".
const Marker = "[REDACTED:"

// minLen is the shortest text worth scanning: no rule matches fewer bytes.
const minLen = 8

var detector = sync.OnceValues(func() (*detect.Detector, error) {
	logging.Logger = logging.Logger.Level(zerolog.Disabled)
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("gitleaks rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("gitleaks rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("gitleaks rules: %w", err)
	}
	url := config.Rule{
		RuleID:      URLPassword,
		Description: "A password in a URL's userinfo",
		Regex:       regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^:/?#@\s"'<>]{1,256}:([^@/?#\s"'<>]{1,256})@[^\s"'<>]`),
		SecretGroup: 1,
		Keywords:    []string{"://"},
	}
	if err := url.Validate(); err != nil {
		return nil, fmt.Errorf("url-password rule: %w", err)
	}
	cfg.Rules[url.RuleID] = url
	cfg.OrderedRules = append(cfg.OrderedRules, url.RuleID)
	cfg.Keywords["://"] = struct{}{}
	d := detect.NewDetector(cfg)
	// Secrets base64-, hex- or percent-encoded (once, or that encoded
	// again) are found too; the encoded text is what gets redacted.
	d.MaxDecodeDepth = 2
	return d, nil
})

// Rules is how many rules the detector applies.
func Rules() int {
	d, err := detector()
	if err != nil {
		return 0
	}
	return len(d.Config.Rules)
}

// Find returns the secrets in s with the rule that found each, the longest
// first. It panics only if gitleaks' embedded rule set does not load, which
// the package's tests would have caught.
func Find(s string) []Found {
	if len(s) < minLen {
		return nil
	}
	d, err := detector()
	if err != nil {
		panic(err)
	}
	var out []Found
	var hidden []Found // secrets found only once decoded
	for _, f := range d.DetectString(s) {
		v := f.Secret
		if v == "" {
			v = f.Match
		}
		if v == "" || strings.HasPrefix(v, Marker) {
			continue
		}
		if encoded(f.Tags) {
			hidden = append(hidden, Found{Rule: f.RuleID, Secret: v})
			continue
		}
		out = append(out, Found{Rule: f.RuleID, Secret: v})
	}
	if len(hidden) > 0 {
		out = append(out, encodings(s, hidden)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Secret) > len(out[j].Secret) })
	return out
}

func encoded(tags []string) bool {
	for _, t := range tags {
		if strings.HasPrefix(t, "decoded:") {
			return true
		}
	}
	return false
}

// encodedRun is a run of characters that may be base64 (standard or URL
// alphabet, with its padding) or hex; percentRun one of percent-encoding.
var (
	encodedRun = stdregexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)
	percentRun = stdregexp.MustCompile(`(?:[A-Za-z0-9._~+-]|%[0-9A-Fa-f]{2}){16,}`)
)

// runs are the encoded runs of s.
func runs(s string) []string {
	out := encodedRun.FindAllString(s, -1)
	for _, r := range percentRun.FindAllString(s, -1) {
		if strings.Contains(r, "%") {
			out = append(out, r)
		}
	}
	return out
}

// encodings returns, as findings of the hidden secrets' rules, the encoded
// runs of s that decode (once or twice) to text holding one: what must be
// redacted is the encoded form, found and checked here rather than taken
// from the detector's positions.
func encodings(s string, hidden []Found) []Found {
	var out []Found
	for _, run := range runs(s) {
		if h, ok := holds(decodings(run, 2), hidden); ok {
			out = append(out, Found{Rule: h.Rule, Secret: run})
		}
	}
	return out
}

func holds(texts []string, hidden []Found) (Found, bool) {
	for _, t := range texts {
		for _, h := range hidden {
			if strings.Contains(t, h.Secret) {
				return h, true
			}
		}
	}
	return Found{}, false
}

// decodings are what run decodes to as base64 (either alphabet, padded or
// not), hex or percent-encoding, and what those decode to, depth times.
func decodings(run string, depth int) []string {
	if depth == 0 {
		return nil
	}
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(run); err == nil {
			out = append(out, string(b))
		}
	}
	if b, err := hex.DecodeString(run); err == nil {
		out = append(out, string(b))
	}
	if strings.Contains(run, "%") {
		if u, err := url.PathUnescape(run); err == nil {
			out = append(out, u)
		}
	}
	for _, d := range slices.Clone(out) {
		for _, inner := range runs(d) {
			out = append(out, decodings(inner, depth-1)...)
		}
	}
	return out
}

// Found is one secret and the rule that found it.
type Found struct {
	Rule   string
	Secret string
}

// Redact returns s with every secret replaced by [REDACTED:RULE], and the
// rules that matched (sorted, each once).
func Redact(s string) (string, []string) {
	found := Find(s)
	if len(found) == 0 {
		return s, nil
	}
	return replace(s, found), rulesOf(found)
}

func replace(s string, found []Found) string {
	for _, f := range found {
		s = strings.ReplaceAll(s, f.Secret, Marker+f.Rule+"]")
	}
	return s
}

func rulesOf(found []Found) []string {
	var rules []string
	for _, f := range found {
		rules = append(rules, f.Rule)
	}
	slices.Sort(rules)
	return slices.Compact(rules)
}

// RedactJSON redacts the string values of a JSON document (object keys are
// names, kept). Secrets are looked for in the decoded strings, so an escape
// sequence does not hide one. The document comes back unchanged, byte for
// byte, when nothing is found; re-encoded otherwise. A document that is not
// JSON is redacted as text and returned as a JSON string.
func RedactJSON(raw json.RawMessage) (json.RawMessage, []string) {
	if len(raw) < minLen {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		text, rules := Redact(string(raw))
		if rules == nil {
			return raw, nil
		}
		b, _ := json.Marshal(text)
		return b, rules
	}
	var texts []string
	walk(v, func(s string) string { texts = append(texts, s); return s })
	found := Find(strings.Join(texts, "\n"))
	if len(found) == 0 {
		return raw, nil
	}
	v = walk(v, func(s string) string { return replace(s, found) })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw, nil // unreachable: v came from a decoder
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), rulesOf(found)
}

// walk applies f to every string value in v, returning the new value.
func walk(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for i := range x {
			x[i] = walk(x[i], f)
		}
	case map[string]any:
		for k := range x {
			x[k] = walk(x[k], f)
		}
	}
	return v
}

// holdMax bounds what Boundary holds back: text this long without a place
// to cut is let through (each piece is still redacted on its own).
const holdMax = 16 << 10

// Boundary is where streamed text s may be cut so that no secret is split
// between two pieces (each piece is redacted on its own, and half a key
// matches no rule): after the last line break, else after the last space,
// and never inside a PEM block whose END line has not arrived. What follows
// the cut waits for more text. It returns 0 when nothing may go yet.
func Boundary(s string) int {
	if len(s) > holdMax {
		return len(s)
	}
	cut := strings.LastIndexByte(s, '\n') + 1
	if cut == 0 {
		cut = strings.LastIndexAny(s, " \t\r") + 1
	}
	if i := strings.LastIndex(s, "-----BEGIN"); i >= 0 {
		// The block goes whole, with its END line, or waits.
		end := strings.Index(s[i:], "-----END")
		closing := -1
		if end >= 0 {
			after := i + end + len("-----END")
			if j := strings.Index(s[after:], "-----"); j >= 0 {
				closing = after + j + len("-----")
			}
		}
		if closing < 0 {
			cut = min(cut, i)
		} else {
			cut = max(cut, closing)
		}
	}
	return cut
}
