package identity

import (
	"fmt"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
)

// Every name a person gives Paddock is checked here, one rule per kind.
// Projects, agents and triggers name Kubernetes resources, paths and URLs,
// so they are DNS labels; users' names come from directories (e-mail
// addresses, logins), so they may hold '.' and '_' too.

// NameKind is what a name names.
type NameKind string

const (
	ProjectName NameKind = "project"
	AgentName   NameKind = "agent"
	TriggerName NameKind = "trigger"
	UserName    NameKind = "user name"
)

// The rules, as a person is told them.
const (
	LabelRule = "1-63 lowercase letters, digits and dashes, starting and ending with a letter or digit"
	UserRule  = "1-63 lowercase letters, digits, '.', '-' or '_', starting with a letter or digit"
)

// CheckName checks a name of kind: errdefs.ErrInvalid, saying the rule,
// when it breaks it.
func CheckName(kind NameKind, s string) error {
	ok, rule := label(s), LabelRule
	if kind == UserName {
		ok, rule = user(s), UserRule
	}
	if !ok {
		return fmt.Errorf("%w: %s %q: want %s", errdefs.ErrInvalid, kind, clip.String(s, 64), rule)
	}
	return nil
}

// label says s is a DNS label: 1-63 of [a-z0-9-], a letter or digit at
// each end. (A regular expression's {0,61} costs a millisecond to compile
// at every start of every program that links this package.)
func label(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerOrDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// user says s is a user name: 1-63 of [a-z0-9._-], a letter or digit
// first.
func user(s string) bool {
	if len(s) == 0 || len(s) > 63 || !lowerOrDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerOrDigit(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerOrDigit(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
