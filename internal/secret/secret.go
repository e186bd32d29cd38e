// Package secret finds credentials in text with gitleaks' rule set (cloud
// keys, tokens, private keys, and so on: over two hundred maintained rules)
// plus Paddock's rule for passwords in URLs, and redacts them: each secret
// becomes [REDACTED:RULE]. Store wraps a store so that nothing it is handed
// reaches disk with a secret in clear text.
package secret

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	stdregexp "regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/regexp"
	"github.com/zricethezav/gitleaks/v8/report"
)

// URLPassword is the rule Paddock adds to gitleaks' set: the password of a
// URL's userinfo (scheme://user:password@host), which gitleaks leaves to
// service-specific rules.
const URLPassword = "url-password"

// Paddock's rules for generic secrets gitleaks leaves alone: a value
// assigned to a name that says it is a secret (DB_PASS=…, password: …),
// and the body of a PEM private key without its BEGIN and END lines.
const (
	SecretAssignment = "secret-assignment"
	KeyBody          = "private-key-body"
)

// Marker is what a redacted secret is replaced with: "[REDACTED:" + rule + "]".
const Marker = "[REDACTED:"

// markerRE is a marker alone: what a redaction left, not a secret.
var markerRE = stdregexp.MustCompile(`^\[REDACTED:[A-Za-z0-9_.-]+\]$`)

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
	assignment := config.Rule{
		RuleID:      SecretAssignment,
		Description: "A value assigned to a name that says it is a secret",
		// NAME_PASS=…, "password": "…", secret_key: …; not a reference
		// to another variable ($X, ${X}, %X%), not a placeholder shorter
		// than 8, and random enough to be a secret.
		// The name holds a secret word as a word of its own (DB_PASS,
		// api-key, clientSecret; not bypass, passes, tokenizer, or a test's
		// PASS line); the value is no expression (parentheses, plus) a
		// reviewer must read, and ends where the assignment does.
		Regex:       regexp.MustCompile(`(?:^|[^A-Za-z0-9])(?:(?:[A-Za-z0-9]+[_.-])*(?:[A-Za-z0-9]*[a-z0-9](?:Passwd|Password|Passphrase|Pwd|Secret|Token|ApiKey|PrivateKey|AccessKey|Credentials?)|(?i:passwd|password|passphrase|pwd|secret|token|api[_.-]?key|private[_.-]?key|access[_.-]?key|credentials?))|(?:[A-Za-z0-9]+[_.-])+(?i:pass))(?:[_.-][A-Za-z0-9]+)*["']?[ \t]{0,4}(?:=|:|:=|=>)[ \t]{0,4}["']?([^\s"'$%{}<>;,()+]{8,200})(?:["'\s;,]|$)`),
		SecretGroup: 1,
		Entropy:     2.5,
		Keywords:    []string{"pass", "pwd", "secret", "token", "key", "credential"},
	}
	body := config.Rule{
		RuleID:      KeyBody,
		Description: "The base64 body of a private key, without its BEGIN and END lines",
		// The DER of a private key opens with its version 0 (PKCS#1 RSA,
		// PKCS#8, SEC 1 EC) or OpenSSH's magic; a certificate's does not.
		Regex:    regexp.MustCompile(`(?:MII[A-Za-z0-9+/]{2}[A-Za-z0-9+/]{0,3}(?:IBAAK|IBADAN|CAQEE)|MHcCAQEE|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=\r\n]{80,}`),
		Keywords: []string{"mii", "mhccaqee", "b3blbnnzac1rzxktdje"},
	}
	for _, r := range []config.Rule{url, assignment, body} {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("%s rule: %w", r.RuleID, err)
		}
		cfg.Rules[r.RuleID] = r
		cfg.OrderedRules = append(cfg.OrderedRules, r.RuleID)
		for _, k := range r.Keywords {
			cfg.Keywords[k] = struct{}{}
		}
	}
	// The global allowlist is for repositories (lock files, vendored
	// paths) and its value patterns drop real secrets ("^true|false|null$"
	// is unanchored on one side): text here has no path to excuse it.
	cfg.Allowlists = nil
	d := detect.NewDetector(cfg)
	// The model writes the text: a "gitleaks:allow" comment must not let a
	// secret through.
	d.IgnoreGitleaksAllow = true
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
	var out []Found
	if !longLine(s) {
		out = find(s)
	} else {
		// The detector's cost grows with findings times line length: long
		// lines are broken at spaces into windows, twice with the breaks
		// shifted by half a window, so that any short "key = value" lies
		// whole in one of them.
		out = find(breakLines(s, 0))
		for _, f := range find(breakLines(s, window/2)) {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	// Tokens written with spaces, looked for once in the text as it is.
	d, err := detector()
	if err != nil {
		panic(err)
	}
	for _, f := range spaced(d, s) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Secret) > len(out[j].Secret) })
	return out
}

// window is the longest line the detector is given.
const window = 1024

func longLine(s string) bool {
	for len(s) > window {
		i := strings.IndexByte(s, '\n')
		if i < 0 || i > window {
			return true
		}
		s = s[i+1:]
	}
	return false
}

// breakLines replaces with line breaks the first space or tab after every
// window bytes of a line (the first break after window-shift bytes).
func breakLines(s string, shift int) string {
	b := []byte(s)
	col := shift
	for i, c := range b {
		switch {
		case c == '\n':
			col = 0
		case col >= window && (c == ' ' || c == '\t'):
			b[i], col = '\n', 0
		default:
			col++
		}
	}
	return string(b)
}

func find(s string) []Found {
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
		if v == "" || markerRE.MatchString(v) {
			continue
		}
		if encoded(f.Tags) {
			hidden = append(hidden, Found{Rule: f.RuleID, Secret: v})
			continue
		}
		out = append(out, Found{Rule: f.RuleID, Secret: v})
	}
	out, hidden = specific(out), specific(hidden)
	if len(hidden) > 0 {
		placed := encodings(s, hidden)
		out = append(out, placed...)
		for _, h := range hidden {
			if !slices.ContainsFunc(placed, func(f Found) bool { return f.Rule == h.Rule }) {
				// Encoded in a way not found again here: fail closed.
				out = append(out, Found{Rule: h.Rule, Whole: true})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Secret) > len(out[j].Secret) })
	return out
}

// spacedRun is text that may be a token written in pieces separated by
// spaces or tabs ("ghp_16C7 e42F 292c …", "AKIA IOSF ODNN 7EXA MPLE"):
// two pieces at least.
var spacedRun = stdregexp.MustCompile(`[A-Za-z0-9_+/=-]+(?:[ \t]+[A-Za-z0-9_+/=-]+)+`)

// spacedKeywords finds the keywords of the detector's rules (lowercase,
// as gitleaks' own prefilter does): only text holding one is tried.
var spacedKeywords = sync.OnceValue(func() *ahocorasick.Trie {
	d, err := detector()
	if err != nil {
		panic(err)
	}
	return ahocorasick.NewTrieBuilder().AddStrings(slices.Sorted(maps.Keys(d.Config.Keywords))).Build()
})

// keyword says whether s holds a keyword of a rule.
func keyword(s string) bool {
	return spacedKeywords().MatchFirstString(strings.ToLower(s)) != nil
}

// Bounds of the piece-by-piece tries: a stretch of at most maxWindowPieces
// pieces holding a keyword is tried at every start and end whose joined
// text is 16 to maxWindow bytes long.
const (
	maxWindowPieces = 32
	maxWindow       = 100
)

// spaced finds tokens written with spaces in them. Each run that may be
// one is joined up and given to the detector, and so is each stretch of
// it in pieces of one length (the last may be shorter: "AKIA Z7Q3 VJ5L
// …"), with and without its first and last piece, since a word joined
// onto the token ("id AKIA…", "…WPRT a") breaks the rule's word boundary;
// a short stretch holding a rule's keyword is tried at every start and
// end (several tokens in a row). Each try is its own text, so no keyword
// of one run lets a rule loose on another. What a specific rule finds
// across a space is redacted as it is written, spaces and all. Generic
// rules are not asked: joined-up prose is no assignment.
func spaced(d *detect.Detector, s string) []Found {
	type span struct{ from, to int } // pieces [from, to)
	var out []Found
	// What the detector said of a joined text, asked once per text (output
	// repeats itself: a log line, a table row).
	said := map[string][]report.Finding{}
	detect := func(joined string) []report.Finding {
		f, ok := said[joined]
		if !ok {
			f = d.DetectString(joined)
			said[joined] = f
		}
		return f
	}
	for _, loc := range spacedRun.FindAllStringIndex(s, -1) {
		var pieces [][2]int
		start := -1
		for i := loc[0]; i <= loc[1]; i++ {
			blank := i == loc[1] || s[i] == ' ' || s[i] == '\t'
			switch {
			case !blank && start < 0:
				start = i
			case blank && start >= 0:
				pieces = append(pieces, [2]int{start, i})
				start = -1
			}
		}
		// A run holding no rule's keyword, joined up, holds no token a
		// specific rule finds (gitleaks asks a rule only where one of its
		// keywords is): most text ends here.
		var whole strings.Builder
		for _, p := range pieces {
			whole.WriteString(s[p[0]:p[1]])
		}
		if !keyword(whole.String()) {
			continue
		}
		tries := map[span]bool{}
		if whole.Len() <= window {
			tries[span{0, len(pieces)}] = true // a longer run is tried stretch by stretch
		}
		for i := 0; i < len(pieces); {
			n, j := pieces[i][1]-pieces[i][0], i+1
			for j < len(pieces) && pieces[j][1]-pieces[j][0] == n {
				j++
			}
			shorter := j < len(pieces) && pieces[j][1]-pieces[j][0] < n
			end := j
			if shorter {
				end = j + 1
			}
			for _, t := range []span{{i, end}, {i + 1, end}, {i, j}, {i + 1, j}} {
				if t.to-t.from >= 2 {
					tries[t] = true
				}
			}
			if end-i <= maxWindowPieces {
				for a := i; a < end; a++ {
					for b := a + 2; b <= end; b++ {
						if n := pieces[b-1][1] - pieces[a][0]; n >= 16 && n <= 2*maxWindow {
							tries[span{a, b}] = true
						}
					}
				}
			}
			i = max(j, i+1)
		}
		for t := range tries {
			var b strings.Builder
			var at []int // at[k] is where the joined text's byte k is in s
			for _, p := range pieces[t.from:t.to] {
				b.WriteString(s[p[0]:p[1]])
				for k := p[0]; k < p[1]; k++ {
					at = append(at, k)
				}
			}
			joined := b.String()
			if len(joined) < 16 || !keyword(joined) {
				continue
			}
			for _, f := range detect(joined) {
				v := f.Secret
				if v == "" {
					v = f.Match
				}
				if v == "" || encoded(f.Tags) || generic(f.RuleID) {
					continue
				}
				k := strings.Index(joined, v)
				if k < 0 {
					continue
				}
				from, to := at[k], at[k+len(v)-1]+1
				if to-from > len(v) && !slices.ContainsFunc(out, func(g Found) bool { return g.Secret == s[from:to] }) {
					out = append(out, Found{Rule: f.RuleID, Secret: s[from:to]}) // written with spaces: else found as it is
				}
			}
		}
	}
	return out
}

// generic says whether a rule finds secrets by their name and randomness
// rather than by a shape of their own.
func generic(rule string) bool {
	return rule == SecretAssignment || rule == KeyBody || rule == URLPassword || strings.HasPrefix(rule, "generic")
}

// specific drops the findings of Paddock's generic rules that overlap a
// finding of a specific rule: the specific rule names the secret.
func specific(found []Found) []Found {
	all := slices.Clone(found)
	return slices.DeleteFunc(found, func(f Found) bool {
		if f.Rule != SecretAssignment && f.Rule != KeyBody {
			return false
		}
		return slices.ContainsFunc(all, func(g Found) bool {
			return g.Rule != SecretAssignment && g.Rule != KeyBody && (strings.Contains(g.Secret, f.Secret) || strings.Contains(f.Secret, g.Secret))
		})
	})
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

// Found is one secret and the rule that found it. Whole means the secret
// was found encoded in a form not located again: the whole text must go.
type Found struct {
	Rule   string
	Secret string
	Whole  bool
}

func whole(found []Found) (string, bool) {
	for _, f := range found {
		if f.Whole {
			return f.Rule, true
		}
	}
	return "", false
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

// Windows of a large text RedactWithin looks at one at a time, each
// overlapping the one before by overlap bytes (a private key block, the
// longest secret, lies whole in one); a window is cut only between runs
// of the characters encodings are written in, and a run longer than
// maxRun is not looked into (ErrUnbroken).
const (
	chunk   = 64 << 10
	overlap = 8 << 10
	maxRun  = 1 << 20
)

// ErrUnbroken is a text with a run of encoded-looking characters longer
// than RedactWithin looks at whole.
var ErrUnbroken = fmt.Errorf("a run of more than %d KiB without a space, a newline or punctuation", maxRun>>10)

// encodedChar says c may be part of an encoded secret (base64, base64url,
// hex, percent-encoding, a JWT's parts).
func encodedChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("+/=_-%.", c) >= 0
}

// cutAfter is where a window of s beginning at start ends: after the
// last newline in its second half, else after the last character no
// encoding uses, else (one run fills it) after the run, however long,
// within maxRun.
func cutAfter(s string, start int) (int, error) {
	end := min(len(s), start+chunk)
	if end == len(s) {
		return end, nil
	}
	if i := strings.LastIndexByte(s[start+chunk/2:end], '\n'); i >= 0 {
		return start + chunk/2 + i + 1, nil
	}
	for i := end - 1; i > start+chunk/2; i-- {
		if !encodedChar(s[i]) {
			return i + 1, nil
		}
	}
	for i := end; i < len(s); i++ {
		if !encodedChar(s[i]) {
			return i + 1, nil
		}
		if i-start > maxRun {
			return 0, ErrUnbroken
		}
	}
	return len(s), nil
}

// RedactWithin is Redact for a large text, within ctx: the text is looked
// at in windows, ctx checked between them; ctx ending (or ErrUnbroken) is
// the error, and nothing is returned.
func RedactWithin(ctx context.Context, s string) (string, []string, error) {
	var found []Found
	for start := 0; ; {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		end, err := cutAfter(s, start)
		if err != nil {
			return "", nil, err
		}
		for _, f := range Find(s[start:end]) {
			if !slices.Contains(found, f) {
				found = append(found, f)
			}
		}
		if end == len(s) {
			break
		}
		// The next window starts within the last overlap bytes, after a
		// newline or else a character no encoding uses.
		next := max(start+1, end-overlap)
		if i := strings.IndexByte(s[next:end], '\n'); i >= 0 {
			next += i + 1
		} else {
			for next < end && encodedChar(s[next]) {
				next++
			}
		}
		start = next
	}
	if len(found) == 0 {
		return s, nil, nil
	}
	sort.SliceStable(found, func(i, j int) bool { return len(found[i].Secret) > len(found[j].Secret) })
	return replace(s, found), rulesOf(found), nil
}

func replace(s string, found []Found) string {
	if rule, ok := whole(found); ok {
		return Marker + rule + "] (an encoded secret: the whole text is withheld)"
	}
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

// RedactJSON redacts the strings of a JSON document (values and names). Secrets are looked for in the decoded strings, so an escape
// sequence does not hide one. The document comes back unchanged, byte for
// byte, when nothing is found; re-encoded otherwise. A document that is not
// JSON is redacted as text and returned as a JSON string.
func RedactJSON(raw json.RawMessage) (json.RawMessage, []string) {
	if len(raw) < minLen {
		return raw, nil
	}
	asText := func() (json.RawMessage, []string) {
		text, rules := Redact(string(raw))
		if rules == nil {
			return raw, nil
		}
		b, _ := json.Marshal(text)
		return b, rules
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return asText() // not one JSON document: text
	}
	var texts []string
	walk(v, func(s string) string { texts = append(texts, s); return s })
	found := Find(strings.Join(texts, "\n"))
	if duplicateKeys(raw) {
		// The decoded document keeps only a key's last value: what the
		// others hold would be written unseen. Redact the bytes as text.
		return asText()
	}
	if len(found) == 0 {
		return raw, nil
	}
	if _, ok := whole(found); ok {
		// Some string holds an encoded secret not located again: each
		// string is judged alone, and the one holding it withheld whole.
		v = walk(v, func(s string) string { out, _ := Redact(s); return out })
	} else {
		v = walk(v, func(s string) string { return replace(s, found) })
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return asText()
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), rulesOf(found)
}

// duplicateKeys reports whether an object of the JSON document raw names a
// key twice.
func duplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // io.EOF, or invalid: Decode judged it already
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.key {
				if top.keys[t] {
					return true
				}
				top.keys[t] = true
				top.key = false
				continue
			}
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
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
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[f(k)] = walk(e, f) // names are looked at too
		}
		return out
	}
	return v
}

// holdMax bounds what Boundary holds back: text this long without a place
// to cut is let through (each piece is still redacted on its own).
const holdMax = 16 << 10

// Boundary is where streamed text s may be cut so that no secret is split
// between two pieces (each piece is redacted on its own, and half a key
// matches no rule): after the last line break (before it when that line
// ends in "=", ":" or an authorization scheme, whose value may follow),
// never inside a PEM block whose END line has not arrived (any case). A
// line longer than holdMax is cut at its last space. What follows the cut
// waits for more text. It returns 0 when nothing may go yet.
func Boundary(s string) int {
	cut := strings.LastIndexByte(s, '\n') + 1
	if cut > 0 {
		// A line ending in an assignment or an authorization scheme goes
		// with the value on the next line.
		line := s[strings.LastIndexByte(s[:cut-1], '\n')+1 : cut-1]
		if pendingValue.MatchString(line) {
			cut = strings.LastIndexByte(s[:cut-1], '\n') + 1
		}
	}
	if len(s) > holdMax && cut == 0 {
		cut = strings.LastIndexAny(s, " \t\r") + 1
		if cut == 0 {
			return len(s)
		}
	}
	if loc := lastBegin(s); loc >= 0 {
		// The block goes whole, with its END line, or waits.
		closing := -1
		if end := pemEnd.FindStringIndex(s[loc:]); end != nil {
			closing = loc + end[1]
		}
		switch {
		case closing >= 0:
			cut = max(cut, closing)
		case len(s)-loc <= holdMax:
			cut = min(cut, loc)
		}
	}
	return cut
}

var (
	pemBegin     = stdregexp.MustCompile(`(?i)-----BEGIN`)
	pemEnd       = stdregexp.MustCompile(`(?i)-----END[^\n]*?-----`)
	pendingValue = stdregexp.MustCompile(`(?i)(?:[=:]|bearer|token|basic)\s*["']?\s*$`)
)

func lastBegin(s string) int {
	all := pemBegin.FindAllStringIndex(s, -1)
	if len(all) == 0 {
		return -1
	}
	return all[len(all)-1][0]
}

// Rule is the rule of the first credential found in s, empty when none.
func Rule(s string) string {
	if found := Find(s); len(found) > 0 {
		return found[0].Rule
	}
	return ""
}
