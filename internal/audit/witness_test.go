package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// A witness's verifier key parses whatever its base64 holds (a plus
// among them), and a key whose hash does not match is refused.
func TestParseWitnessKeys(t *testing.T) {
	plus := false
	for i := 0; i < 200 && !plus; i++ {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		key := base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, pub...))
		plus = strings.Contains(key, "+")
		vkey := fmt.Sprintf("w.example+%08x+%s", keyHash("w.example", pub, algCosignatureV1), key)
		w, err := ParseWitness("https://w.example/=" + vkey)
		if err != nil {
			t.Fatalf("%s: %v", vkey, err)
		}
		if w.URL != "https://w.example" || w.Verifier.Name() != "w.example" {
			t.Fatalf("%+v", w)
		}
		if _, err := ParseWitness("https://w.example=" + strings.Replace(vkey, "w.example+", "other+", 1)); err == nil {
			t.Fatal("a key whose hash does not match its name was taken")
		}
	}
	if !plus {
		t.Fatal("no key with a plus in 200 tries")
	}
}
