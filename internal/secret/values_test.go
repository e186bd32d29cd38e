package secret

import (
	"encoding/base64"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
)

// The attack: a declared credential reached the transcript, the model and
// the database in its base64, hex, reversed and split forms, because only
// its literal value was masked. Real bash prints each form here.
func TestValuesMaskedInEveryForm(t *testing.T) {
	const value = "dpl-Zq7Rk2Lm9Xv4Hq4Wn8Tz"
	script := `
printf '%s\n' "$TOKEN"
printf '%s\n' "$TOKEN" | base64
printf 'token=%s\n' "$TOKEN" | base64 -w0; echo
printf 'xy%s' "$TOKEN" | base64 | tr '+/' '-_'
printf '%s' "$TOKEN" | od -An -tx1 -v | tr -d ' \n'; echo
printf '%s' "$TOKEN" | od -An -tx1 -v | tr -d ' \n' | tr a-f A-F; echo
printf '%s\n' "$TOKEN" | rev
printf '%s\n%s\n%s\n' "${TOKEN:0:8}" "${TOKEN:8:8}" "${TOKEN:16}"
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = []string{"TOKEN=" + value, "PATH=/usr/bin:/bin"}
	raw, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	out := NewValues(map[string]string{"DEPLOY_TOKEN": value}).Mask(string(raw))
	t.Logf("masked:\n%s", out)
	if n := strings.Count(out, "[REDACTED:credential DEPLOY_TOKEN]"); n < 8 {
		t.Errorf("%d forms masked, want every one of 8", n)
	}
	for _, form := range []string{value, reverse(value), hex.EncodeToString([]byte(value)), base64.StdEncoding.EncodeToString([]byte(value))} {
		for i := 0; i+8 <= len(form); i++ {
			if strings.Contains(out, form[i:i+8]) {
				t.Errorf("a piece %q of %q came through", form[i:i+8], form)
			}
		}
	}

	// Control: text without the value is left as it is, and a value too
	// short to tell from words is not masked.
	plain := "the deploy went fine\nZq7 is not enough\n"
	if got := NewValues(map[string]string{"DEPLOY_TOKEN": value, "PIN": "123"}).Mask(plain); got != plain {
		t.Errorf("masked what holds no value: %q", got)
	}
}

// Overlapping values are masked whole, with both names.
func TestValuesOverlapping(t *testing.T) {
	v := NewValues(map[string]string{"A": "abcdefghij", "B": "ghijklmnop"})
	if got := v.Mask("x abcdefghijklmnop y"); got != "x [REDACTED:credential A, B] y" {
		t.Errorf("%q", got)
	}
}

// BenchmarkValuesMask masks a command's largest output (10 MiB) holding
// no value, with two credentials declared.
func BenchmarkValuesMask(b *testing.B) {
	v := NewValues(map[string]string{"A": "dpl-Zq7Rk2Lm9Xv4Hq4Wn8Tz", "B": "another-credential-value-0123"})
	text := strings.Repeat("ok   github.com/paddock-dev/paddock/internal/secret 0.022s\n", 10<<20/60)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		v.Mask(text)
	}
}

// The review's false positives: a value that is no token is masked whole,
// never by its pieces.
func TestValuesThatAreNoTokens(t *testing.T) {
	v := NewValues(map[string]string{"PORT": "5432", "DSN": "postgres://app:pw@db:5432/app", "WORD": "password123"})
	for _, text := range []string{"connect to postgres://other@elsewhere/x", "the password field", "port 5433"} {
		if got := v.Mask(text); got != text {
			t.Errorf("%q masked as %q", text, got)
		}
	}
	if got := v.Mask("dsn=postgres://app:pw@db:5432/app"); !strings.HasPrefix(got, "dsn=[REDACTED:credential DSN") {
		t.Errorf("the whole value: %q", got)
	}
}
