package identity

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The checks are the rules' regular expressions, written out: they agree
// with them on every name tried.
func TestNamesAgreeWithTheirRules(t *testing.T) {
	labelRE := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	userRE := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	names := []string{"", "a", "-", "a-", "-a", "a-b", "ab", "A", "a.b", "a_b", "_a", ".a", "a b", "é", "a\n",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat("-", 61) + "a", "a" + strings.Repeat("-", 62) + "a"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "az09-._A \x00é"
	for range 20000 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for _, n := range names {
		if got, want := label(n), labelRE.MatchString(n); got != want {
			t.Errorf("label(%q) = %v, the rule says %v", n, got, want)
		}
		if got, want := user(n), userRE.MatchString(n); got != want {
			t.Errorf("user(%q) = %v, the rule says %v", n, got, want)
		}
		if err := CheckName(ProjectName, n); (err == nil) != labelRE.MatchString(n) {
			t.Errorf("CheckName(project, %q) = %v", n, err)
		}
	}
}
