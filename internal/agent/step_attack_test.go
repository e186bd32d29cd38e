package agent

import (
	"context"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
)

// Attack probes on Step's coalescing: the model chooses its text and how it
// is cut into deltas; each assistant_text event is redacted alone (as the
// redacted store does), and no secret may survive in their concatenation.

type attackProvider struct{ deltas []string }

func (p attackProvider) Stream(_ context.Context, _ provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	for _, d := range p.deltas {
		sink(provider.Delta{Kind: provider.DeltaText, Text: d})
	}
	return provider.Response{Text: strings.Join(p.deltas, "")}, nil
}

type attackAppender struct{ texts []string }

func (a *attackAppender) AppendEvent(_ context.Context, e session.Event) (session.Event, error) {
	e.Data, _ = secret.RedactJSON(e.Data) // what internal/store/redacted does
	if e.Kind == session.EventAssistantText {
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		a.texts = append(a.texts, d.Text)
	}
	return e, nil
}

// slowClock advances 200 ms per reading: every delta lands past the
// 150 ms window, so every delta triggers a Boundary flush (a slow stream).
func slowClock() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time { t = t.Add(200 * time.Millisecond); return t }
}

func attackRand(n int, seed int64) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.Intn(len(alnum))]
	}
	return string(b)
}

func runAttackStep(t *testing.T, deltas []string, now func() time.Time) []string {
	t.Helper()
	var out attackAppender
	_, err := Step(context.Background(), attackProvider{deltas}, &out, StepInput{SessionID: "s", TurnID: "t"}, now)
	if err != nil {
		t.Fatal(err)
	}
	return out.texts
}

func checkNoLeak(t *testing.T, deltas []string, leak string, now func() time.Time) {
	t.Helper()
	whole := strings.Join(deltas, "")
	if red, _ := secret.Redact(whole); strings.Contains(red, leak) {
		t.Fatalf("precondition: whole text not redacted either: %q", red)
	}
	texts := runAttackStep(t, deltas, now)
	for i, x := range texts {
		if j := strings.Index(x, leak); j >= 0 {
			t.Errorf("secret %q survives in streamed event %d of %d: ...%q...", leak, i, len(texts), x[max(0, j-40):min(len(x), j+len(leak)+40)])
		}
	}
}

// TestAttackStepKeywordContextSplit: rules that need a keyword before the
// value (generic-api-key and gitleaks' many "<service> ... = value" rules,
// curl auth headers) match across spaces and line breaks; Boundary cuts at
// the last space (or line break), putting keyword and value in different
// events, and the value alone matches nothing.
func TestAttackStepKeywordContextSplit(t *testing.T) {
	val := attackRand(24, 1)
	bearer := attackRand(40, 2)
	cases := map[string][]string{
		"space":       {"Set it with api_key = ", val, " and restart the service please."},
		"line break":  {"Put this in the file:\napi_key =\n", val, "\nthen restart."},
		"curl bearer": {`Run curl -H "Authorization: Bearer `, bearer, `" https://api.example.com/v1 now.`},
	}
	for name, deltas := range cases {
		t.Run(name, func(t *testing.T) {
			leak := val
			if name == "curl bearer" {
				leak = bearer
			}
			checkNoLeak(t, deltas, leak, slowClock())
		})
	}
}

// TestAttackStepLowercasePEM: gitleaks' private-key rule is
// case-insensitive; Boundary looks for "-----BEGIN" only, so a lowercase
// block is cut at line breaks and no piece holds both its BEGIN and END.
func TestAttackStepLowercasePEM(t *testing.T) {
	var body []string
	for i := 0; i < 6; i++ {
		body = append(body, attackRand(64, int64(10+i)))
	}
	deltas := []string{"here:\n", "-----begin rsa " + "private key-----\n"}
	for _, l := range body {
		deltas = append(deltas, l+"\n")
	}
	deltas = append(deltas, "-----end rsa "+"private key-----\n", "done\n")
	checkNoLeak(t, deltas, body[2], slowClock())
}

// TestAttackStepOpenBeginOverflow: a bare "-----BEGIN" that never closes
// makes Boundary hold everything after it; past holdMax (16 KB) the whole
// buffer is let through, cutting a token the deltas had split.
func TestAttackStepOpenBeginOverflow(t *testing.T) {
	pat := "ghp_" + attackRand(36, 3)
	deltas := []string{"PEM files start with -----BEGIN and a label.\n"}
	held := len("-----BEGIN and a label.\n") // held from here on
	const line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed\n"
	for held+len(line) < 16370 {
		deltas = append(deltas, line)
		held += len(line)
	}
	deltas = append(deltas, strings.Repeat("z", 16370-held-1)+"\n")
	// 16370 bytes held; this delta takes the buffer past 16 KB mid-token.
	deltas = append(deltas, "token "+pat[:20], pat[20:]+" ok\n")
	checkNoLeak(t, deltas, pat[4:20], func() time.Time { return time.Unix(0, 0) })
}
