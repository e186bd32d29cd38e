package secret

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Fixtures are assembled at run time so the repository holds no literal
// credential for scanners to trip on.
var (
	awsKey    = "AKIA" + "Z7Q3VJ5LXKM2WPRT"
	githubPAT = "ghp_" + "R5tP9zKq2LmX8vN3bW7cY1dF6gH4jS0aQeUi"
	pemKey    = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf\n-----END RSA " + "PRIVATE KEY-----"
	urlPass   = "s3cr3t-Pa55"
)

func TestRedact(t *testing.T) {
	cases := []struct {
		name, in string
		rules    []string
		gone     []string
	}{
		{"aws", "export AWS_ACCESS_KEY_ID=" + awsKey + "\n", []string{"aws-access-token"}, []string{awsKey}},
		{"github", "token: " + githubPAT, []string{"github-pat"}, []string{githubPAT}},
		{"pem", "key:\n" + pemKey + "\ndone", []string{"private-key"}, []string{"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"}},
		{"url password", "git clone https://bob:" + urlPass + "@git.example.com/r.git", []string{URLPassword}, []string{urlPass}},
		{"base64", "run printf %s " + base64.StdEncoding.EncodeToString([]byte("aws_access_key_id = "+awsKey+"\n")) + " | base64 -d", []string{"aws-access-token"}, []string{base64.StdEncoding.EncodeToString([]byte("aws_access_key_id = " + awsKey + "\n"))}},
		{"hex on a later line", "first line\nsecond " + hex.EncodeToString([]byte("token "+githubPAT)) + " end", []string{"github-pat"}, []string{hex.EncodeToString([]byte("token " + githubPAT))}},
		{"base64 after a key", "AWS=" + base64.StdEncoding.EncodeToString([]byte(awsKey)) + ";", []string{"aws-access-token"}, []string{base64.StdEncoding.EncodeToString([]byte(awsKey))}},
		{"percent-encoded", "u=" + url.QueryEscape("x "+githubPAT+" y") + "&z", []string{"github-pat"}, []string{githubPAT}},
		{"several", awsKey + " " + githubPAT, []string{"aws-access-token", "github-pat"}, []string{awsKey, githubPAT}},
		{"plain text", "the quick brown fox jumps over the lazy dog; go test ./... passed", nil, nil},
		{"digests and ids", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 session 3f1c2a9e-6b7d-4c1e-9a55-0e6f1d2c3b4a", nil, nil},
		{"scp-style git remote", "git@github.com:paddock-dev/paddock.git and https://example.com/a@b", nil, nil},
		{"aws documentation example", "AKIAIOSFODNN7EXAMPLE", nil, nil},
		{"already redacted", "[REDACTED:github-pat] [REDACTED:aws-access-token]", nil, nil},
		{"short", "ghp_x", nil, nil},
		{"token in groups of four", "token " + spacedOut(githubPAT, 4, " ") + " done", []string{"github-pat"}, []string{spacedOut(githubPAT, 4, " ")[:14]}},
		{"key with tabs", "id\t" + spacedOut(awsKey, 4, "\t"), []string{"aws-access-token"}, []string{spacedOut(awsKey, 4, "\t")}},
		{"a character at a time", "say " + spacedOut(githubPAT, 1, " ") + ".", []string{"github-pat"}, []string{spacedOut(githubPAT, 1, " ")[8:30]}},
		{"prose and code with spaces", "the quick brown fox jumps over the lazy dog\nfor i in a b c d e f; do echo $i; done\nAKIA is how AWS keys open, ghp_ GitHub's", nil, nil},
		{"hex dump", "00000000  7f 45 4c 46 02 01 01 00  00 00 00 00 00 00 00 00  |.ELF............|", nil, nil},
		// The review's leaks: a word joined onto the key, several keys in a
		// row, two pieces, double spaces.
		{"a word after the key", "id " + spacedOut(awsKey, 4, " ") + " a b", []string{"aws-access-token"}, []string{spacedOut(awsKey, 4, " ")}},
		{"a word as long as the groups before it", "key " + spacedOut(awsKey, 3, " ") + " done", []string{"aws-access-token"}, []string{spacedOut(awsKey, 3, " ")[4:20]}},
		{"two keys in a row", spacedOut(awsKey, 4, " ") + " " + spacedOut("AKIA"+"Q7Z3VJ5LXKM2WPRA", 4, " "), []string{"aws-access-token"}, []string{spacedOut(awsKey, 4, " "), spacedOut("AKIA"+"Q7Z3VJ5LXKM2WPRA", 4, " ")}},
		{"two pieces", "token " + githubPAT[:20] + " " + githubPAT[20:], []string{"github-pat"}, []string{githubPAT[:20] + " " + githubPAT[20:]}},
		{"double spaces", spacedOut(githubPAT, 8, "  "), []string{"github-pat"}, []string{spacedOut(githubPAT, 8, "  ")}},
		{"hex groups beside another rule's keyword", "sourcegraph\n9f86d081 884c7d65 9a2feaa0 c55ad015 a3bf4f1b", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, rules := Redact(c.in)
			if strings.Join(rules, ",") != strings.Join(c.rules, ",") {
				t.Fatalf("rules %v, want %v (out %q)", rules, c.rules, out)
			}
			for _, s := range c.gone {
				if strings.Contains(out, s) {
					t.Errorf("secret %q still in %q", s, out)
				}
			}
			for _, r := range c.rules {
				if !strings.Contains(out, Marker+r+"]") {
					t.Errorf("no marker for %s in %q", r, out)
				}
			}
			if c.rules == nil && out != c.in {
				t.Errorf("changed text without a finding: %q", out)
			}
			again, more := Redact(out)
			if again != out || more != nil {
				t.Errorf("redacting again changed %q to %q (%v)", out, again, more)
			}
		})
	}
}

// spacedOut writes s in pieces of n characters separated by sep.
func spacedOut(s string, n int, sep string) string {
	var parts []string
	for len(s) > n {
		parts, s = append(parts, s[:n]), s[n:]
	}
	return strings.Join(append(parts, s), sep)
}

func TestRedactJSON(t *testing.T) {
	doc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	cases := []struct {
		name string
		in   json.RawMessage
		gone []string
		keep []string
	}{
		{"nested strings", doc(map[string]any{"output": "key " + awsKey, "list": []any{1, "x " + githubPAT}, "n": 3}), []string{awsKey, githubPAT}, []string{`"n":3`}},
		{"pem split by JSON escapes", doc(map[string]string{"text": pemKey}), []string{"MIIEowIBAAKCAQEAu1SU1LfVLPHCoz"}, nil},
		{"unicode escapes", json.RawMessage(`{"text":"\u0041KIA` + awsKey[4:] + `"}`), []string{awsKey[4:]}, nil},
		{"keys are names", doc(map[string]string{"aws_access_key_id": "none"}), nil, []string{"aws_access_key_id"}},
		{"not JSON", json.RawMessage("raw " + githubPAT), []string{githubPAT}, nil},
		// A model step: long text and a call whose arguments carry two
		// encoded secrets; the text keeps every other word.
		{"text and encoded arguments", doc(map[string]any{"step": 0, "response": map[string]any{
			"text":      strings.Repeat("reading ", 61) + "found the token " + githubPAT + " in the notes.",
			"toolCalls": []any{map[string]any{"args": `{"command":"printf %s ` + base64.StdEncoding.EncodeToString([]byte("id = "+awsKey+"\n")) + ` | base64 -d; printf %s ` + base64.StdEncoding.EncodeToString([]byte(pemKey)) + ` | base64 -d"}`}}}}),
			[]string{githubPAT, base64.StdEncoding.EncodeToString([]byte("id = " + awsKey + "\n")), base64.StdEncoding.EncodeToString([]byte(pemKey))[:40]},
			[]string{strings.Repeat("reading ", 61) + "found the token [REDACTED:github-pat] in the notes.", "printf %s [REDACTED:aws-access-token] | base64 -d", "printf %s [REDACTED:private-key] | base64 -d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, rules := RedactJSON(c.in)
			for _, s := range c.gone {
				if strings.Contains(string(out), s) {
					t.Errorf("secret still in %s", out)
				}
			}
			if len(c.gone) > 0 && (rules == nil || !json.Valid(out)) {
				t.Errorf("rules %v, valid %v: %s", rules, json.Valid(out), out)
			}
			if len(c.gone) == 0 && string(out) != string(c.in) {
				t.Errorf("changed without a finding: %s -> %s", c.in, out)
			}
			for _, s := range c.keep {
				if !strings.Contains(string(out), s) {
					t.Errorf("%q lost from %s", s, out)
				}
			}
		})
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	small := json.RawMessage(`{"text":"ran go test ./... and every package passed in 3.2s","turn":"turn-1"}`)
	large, _ := json.Marshal(map[string]string{"output": strings.Repeat("ok  \tgithub.com/x/y\t0.123s\n", 40000)})
	for _, c := range []struct {
		name string
		doc  json.RawMessage
	}{{"event", small}, {"output1MB", large}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			for b.Loop() {
				RedactJSON(c.doc)
			}
		})
	}
}

func TestBoundary(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"no place to cut", 0},
		{"api_key =\nR5tP9zKq", 0},
		{"done.\nAuthorization: Bearer\nR5t", len("done.\n")},
		{"line one\nline tw", len("line one\n")},
		{"token ghp_R5tP9", 0},
		{strings.Repeat("x", holdMax) + " tail", holdMax + 1},
		{"nothingtocut", 0},
		{"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n", len("key:\n")},
		{"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIV", len("key:\n")},
		{"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nnext", len("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n")},
		{strings.Repeat("x", holdMax+1), holdMax + 1},
	}
	for _, c := range cases {
		if got := Boundary(c.in); got != c.want {
			t.Errorf("Boundary(%.40q) = %d, want %d", c.in, got, c.want)
		}
	}
	// Streamed in pieces of any size, a key never leaves in two halves.
	text := "the key is " + githubPAT + " and\n" + pemKey + "\nthat is all"
	for size := 1; size <= 600; size += 7 {
		var out, buf strings.Builder
		for i := 0; i < len(text); i += size {
			buf.WriteString(text[i:min(i+size, len(text))])
			s := buf.String()
			n := Boundary(s)
			piece, _ := Redact(s[:n])
			out.WriteString(piece)
			buf.Reset()
			buf.WriteString(s[n:])
		}
		last, _ := Redact(buf.String())
		out.WriteString(last)
		if strings.Contains(out.String(), "R5tP9zKq2LmX8vN3") || strings.Contains(out.String(), "MIIEowIBAAKCAQEAu1SU1LfVLP") {
			t.Fatalf("pieces of %d bytes let a secret through: %q", size, out.String())
		}
	}
}

// Issue 36's generic secrets: assignments to names that say they are
// secrets, and a private key's body without its BEGIN and END lines, are
// found; references to variables, short placeholders and prose are not.
func TestGenericSecrets(t *testing.T) {
	for _, c := range []struct{ in, rule, gone string }{
		{"DB_PASS=Xk9vQ2mL7pRt\n", SecretAssignment, "Xk9vQ2mL7pRt"},
		{"export PASSWORD='correct-horse-battery-staple'\n", SecretAssignment, "correct-horse-battery-staple"},
		{`{"api_key": "q8Zr4LmN2vXc7TbY"}`, SecretAssignment, "q8Zr4LmN2vXc7TbY"},
		{"smtp_password: hunter2hunter2\n", SecretAssignment, "hunter2hunter2"},
		{"clientSecret: 8f7a6b5c4d3e2f1a\n", SecretAssignment, "8f7a6b5c4d3e2f1a"},
		{"here it is:\n" + pemBody() + "\n", KeyBody, pemBody()[:40]},
	} {
		out, rules := Redact(c.in)
		if !slices.Contains(rules, c.rule) || strings.Contains(out, c.gone) {
			t.Errorf("%q: %q %v, want %s and no %q", c.in, out, rules, c.rule, c.gone)
		}
	}
	// The review's false positives: a test's PASS line, words holding a
	// secret word, and code a reviewer must read.
	for _, in := range []string{"PASSWORD=$DB_PASSWORD\n", "password: ${SECRET}\n", "the token is required\n", "passwordless login works\n",
		"--- PASS: TestReviewValuesEncodings (0.00s)\n", "tokenizer: BertWordPiece\n", "bypass=trueFalseMaybe\n", "Compass: northwest-by-north\n",
		"passes: 12345678901\n", "passthrough: https://evil.example.com/install.sh\n", "secretName: my-app-tls-cert\n", "token=exec(chr(105)+chr(109))\n",
		"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYDVQQDExlCYWx0aW1vcmUgQ3liZXJUcnVzdCBSb290\n"} {
		if out, rules := Redact(in); len(rules) > 0 {
			t.Errorf("%q: redacted as %v: %q", in, rules, out)
		}
	}
}

// BenchmarkRedactLargeText is the redaction of the largest text file a
// message may carry (10 MiB of log lines, no secret in them).
func BenchmarkRedactLargeText(b *testing.B) {
	data := strings.Repeat("2026-12-05T06:00:00Z INFO build step 3 of 12 finished in 1.2s\n", 10<<20/64)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Redact(data)
	}
}

// TestRedactWithinLooksAtEveryWindow: a large text is looked at window by
// window, and a secret anywhere (on either side of a cut, a private key
// block across one) is redacted as Redact would; an ended context stops
// it with its error and no text.
func TestRedactWithinLooksAtEveryWindow(t *testing.T) {
	filler := strings.Repeat("2026-12-05T06:00:00Z INFO build step finished\n", 2000) // ~90 KiB
	for _, at := range []int{0, chunk/2 + 17, chunk - 30, chunk - overlap + 5, len(filler) - 10} {
		for _, planted := range []string{"export AWS_ACCESS_KEY_ID=" + awsKey + "\n", "key:\n" + pemKey + "\n"} {
			text := filler[:at] + "\n" + planted + filler[at:]
			out, rules, err := RedactWithin(t.Context(), text)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, awsKey) || strings.Contains(out, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0") || len(rules) == 0 {
				t.Errorf("a secret at %d was not redacted (rules %v)", at, rules)
			}
			want, _ := Redact(text)
			if out != want {
				t.Errorf("at %d: RedactWithin differs from Redact", at)
			}
		}
	}
	// An encoded secret deep in one long line of base64: no window cuts
	// the run it is in.
	noise := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("pad ", 30000)))
	encoded := base64.StdEncoding.EncodeToString([]byte("aws_access_key_id = " + awsKey + "\n"))
	for _, at := range []int{chunk - 10, chunk + 3, 3 * chunk / 2} {
		text := "data: " + noise[:at] + " " + encoded + " " + noise[at:] + "\n"
		out, _, err := RedactWithin(t.Context(), text)
		if err != nil || strings.Contains(out, encoded) {
			t.Errorf("an encoded secret at %d in a long line was kept (%v)", at, err)
		}
	}
	// A text whose base64 holds the key deep inside, on one line.
	lines := strings.Repeat("the build step printed this line and carried on\n", 2000)
	for _, prefix := range []string{"blob: ", "blob:  ", "blob:   "} {
		text := prefix + base64.StdEncoding.EncodeToString([]byte(lines+"aws_access_key_id = "+awsKey+"\n"+lines)) + "\n"
		if out, _, err := RedactWithin(t.Context(), text); err != nil || out == text {
			t.Errorf("prefix %q: the key encoded in a long line was kept (%v)", prefix, err)
		}
	}
	if _, _, err := RedactWithin(t.Context(), strings.Repeat("A", maxRun+chunk)); !errors.Is(err, ErrUnbroken) {
		t.Errorf("a run longer than maxRun: %v", err)
	}
	out, rules, err := RedactWithin(t.Context(), filler)
	if err != nil || out != filler || rules != nil {
		t.Errorf("plain text came back changed: %v %v", rules, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if out, _, err := RedactWithin(ctx, filler); err == nil || out != "" {
		t.Errorf("an ended context: %q, %v", out[:min(len(out), 20)], err)
	}
}
