package secret

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// Attack probes: each subtest is an input for which a secret the detector
// recognizes should not survive redaction. Fixtures are assembled at run time.

func attackRand(n int, alphabet string, seed int64) string {
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return string(b)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// pemBody is the base64 body of pemKey (what must not survive).
func pemBody() string {
	_, rest, _ := strings.Cut(pemKey, "-----\n")
	body, _, _ := strings.Cut(rest, "\n-----END")
	return body
}

// mustDetect checks that gitleaks itself (not Find) reports a secret in s.
func mustDetect(t *testing.T, s string) {
	t.Helper()
	d, err := detector()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.DetectString(s)) == 0 {
		t.Fatalf("precondition: gitleaks finds nothing in %q", s)
	}
}

// TestAttackRedactUnicodeEscape: gitleaks decodes \uXXXX escapes (its
// "unicode" codec) and finds the token, but encodings()/decodings() know
// only base64, hex and percent, so no encoded run is redacted.
func TestAttackRedactUnicodeEscape(t *testing.T) {
	esc := func(s string) string {
		var b strings.Builder
		for _, c := range s {
			fmt.Fprintf(&b, `\u%04x`, c)
		}
		return b.String()
	}
	cases := map[string]string{
		"first char escaped": `token = "` + esc(githubPAT[:1]) + githubPAT[1:] + `"`,
		"all escaped":        `token = "` + esc(githubPAT) + `"`,
		"aws all escaped":    `key: ` + esc(awsKey),
		"U+ code points":     `U+0067 U+0068 U+0070 U+005F ` + githubPAT[4:],
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			mustDetect(t, in)
			out, rules := Redact(in)
			if rules == nil || !strings.Contains(out, Marker) {
				t.Errorf("gitleaks reports a secret but Redact changes nothing: %q -> %q (rules %v)", in, out, rules)
			}
			if strings.Contains(out, githubPAT[4:]) {
				t.Errorf("token body survives: %q", out)
			}
		})
	}
}

// TestAttackRedactPercentHeaderPEM: a PEM whose header spaces are
// percent-encoded is found by gitleaks after decoding; the only percent run
// is the header line, which does not decode to the whole key, so nothing
// is redacted and the key body stays in clear text.
func TestAttackRedactPercentHeaderPEM(t *testing.T) {
	in := strings.Replace(pemKey, "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN%20RSA%20PRIVATE%20KEY-----", 1)
	mustDetect(t, in)
	out, _ := Redact(in)
	if strings.Contains(out, pemBody()[:60]) {
		t.Errorf("private key body survives: %q", out)
	}
}

// TestAttackRedactPartialPercent: one character of a secret
// percent-encoded, with a character outside percentRun's class ("/") in the
// secret: gitleaks decodes and finds it, but no run decodes to the whole
// secret.
func TestAttackRedactPartialPercent(t *testing.T) {
	s3 := attackRand(18, alnum, 3) + "/" + attackRand(21, alnum, 4) // AWS-secret-shaped, 40 chars
	in := "aws_secret_access_key=" + s3[:5] + "%2B" + s3[5:] + "\n"
	mustDetect(t, in)
	out, _ := Redact(in)
	if strings.Contains(out, s3[5:]) {
		t.Errorf("secret survives: %q", out)
	}
}

// TestAttackRedactAllowComment: gitleaks skips any finding on a line that
// holds "gitleaks:allow". The model controls that line.
func TestAttackRedactAllowComment(t *testing.T) {
	for name, in := range map[string]string{
		"github": "token=" + githubPAT + " # gitleaks:allow",
		"aws":    "gitleaks:allow " + awsKey,
		"url":    "https://bob:" + urlPass + "@db.example.com/x gitleaks:allow",
	} {
		t.Run(name, func(t *testing.T) {
			out, _ := Redact(in)
			for _, s := range []string{githubPAT, awsKey, urlPass} {
				if strings.Contains(out, s) {
					t.Errorf("secret survives: %q", out)
				}
			}
		})
	}
}

// TestAttackRedactGlobalAllowlist: gitleaks' global allowlist regex
// (?i)^true|false|null$ is unanchored in the middle: any secret holding
// "false", starting with "true" or ending with "null" is dropped, for every
// rule, url-password included.
func TestAttackRedactGlobalAllowlist(t *testing.T) {
	for name, pw := range map[string]string{
		"contains false": "Xq7" + "false" + "Zr9Kp2",
		"starts True":    "True" + "Zr9Kp2wQ",
		"ends null":      "Zr9Kp2wQ" + "null",
	} {
		t.Run(name, func(t *testing.T) {
			in := "postgres://admin:" + pw + "@db.internal:5432/app"
			out, _ := Redact(in)
			if strings.Contains(out, pw) {
				t.Errorf("password survives: %q", out)
			}
		})
	}
}

// TestAttackRedactMarkerPrefix: a URL password that starts with the marker
// text is skipped as "already redacted".
func TestAttackRedactMarkerPrefix(t *testing.T) {
	pw := "[REDACTED:x]" + urlPass
	in := "https://bob:" + pw + "@git.example.com/r.git"
	out, _ := Redact(in)
	if strings.Contains(out, urlPass) {
		t.Errorf("password survives: %q", out)
	}
}

// TestAttackRedactJSONDuplicateKey: the decoder keeps the last of two
// equal keys; the first value is never scanned and, nothing being found,
// the raw document is returned byte for byte.
func TestAttackRedactJSONDuplicateKey(t *testing.T) {
	raw := json.RawMessage(`{"text":"` + githubPAT + `","text":"hello"}`)
	out, _ := RedactJSON(raw)
	if strings.Contains(string(out), githubPAT) {
		t.Errorf("secret survives: %s", out)
	}
}

// TestAttackRedactJSONTrailing: dec.More() is false before ']' or '}', so
// a document followed by "]..." is treated as JSON; its tail is never
// scanned and the raw bytes come back unchanged.
func TestAttackRedactJSONTrailing(t *testing.T) {
	for name, raw := range map[string]string{
		"bracket": `{"a":"b"}]` + githubPAT,
		"brace":   `"x"}` + awsKey,
	} {
		t.Run(name, func(t *testing.T) {
			out, _ := RedactJSON(json.RawMessage(raw))
			if strings.Contains(string(out), githubPAT) || strings.Contains(string(out), awsKey) {
				t.Errorf("secret survives: %s", out)
			}
		})
	}
}

// TestAttackRedactJSONKey: object keys are never scanned.
func TestAttackRedactJSONKey(t *testing.T) {
	raw := json.RawMessage(`{"env":{"` + githubPAT + `":"set"}}`)
	out, _ := RedactJSON(raw)
	if strings.Contains(string(out), githubPAT) {
		t.Errorf("secret survives: %s", out)
	}
}

// TestAttackRedactSlowLongLine: many key=value findings on one long line
// (an env dump joined by spaces, a minified config): gitleaks runs its
// allowlist regexes over the whole line once per finding, so the cost was
// findings x line length (40 KB took seconds, 100 KB about 30 s). The
// cost must grow with the line, not with its square: four times the line
// may take at most eight times as long (the fastest of three runs each,
// interleaved, so a busy machine slows both alike).
func TestAttackRedactSlowLongLine(t *testing.T) {
	line := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "api_key=%s ", attackRand(14, alnum, int64(i)))
		}
		return b.String()
	}
	short, long := line(10<<10), line(40<<10)
	fastest := [2]time.Duration{time.Hour, time.Hour}
	for range 3 {
		for i, s := range []string{short, long} {
			start := time.Now()
			Redact(s)
			fastest[i] = min(fastest[i], time.Since(start))
		}
	}
	t.Logf("%d bytes: %v; %d bytes: %v", len(short), fastest[0], len(long), fastest[1])
	if fastest[1] > 8*fastest[0] {
		t.Errorf("Redact of a %d-byte line took %v, of a %d-byte line %v: more than linear", len(short), fastest[0], len(long), fastest[1])
	}
}
