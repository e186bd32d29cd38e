package identity

import (
	"fmt"
	"regexp"

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

var (
	labelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	userRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
)

// CheckName checks a name of kind: errdefs.ErrInvalid, saying the rule,
// when it breaks it.
func CheckName(kind NameKind, s string) error {
	re, rule := labelRE, LabelRule
	if kind == UserName {
		re, rule = userRE, UserRule
	}
	if !re.MatchString(s) {
		return fmt.Errorf("%w: %s %q: want %s", errdefs.ErrInvalid, kind, clip.String(s, 64), rule)
	}
	return nil
}
