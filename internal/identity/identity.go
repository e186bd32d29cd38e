// Package identity is who may do what: users, their API tokens (random,
// shown once, stored as a hash), projects' roles and what each allows. It
// is pure; the store keeps users, tokens and memberships, and the API asks
// Role.Can before every call.
package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
)

// Role is a member's role in a project.
type Role string

// The roles, from the most to the least trusted.
const (
	Admin   Role = "admin"   // everything in the project: members, policy, retention, agents
	Member  Role = "member"  // start, steer and approve sessions
	Auditor Role = "auditor" // read sessions and their audit logs
	Viewer  Role = "viewer"  // read sessions
	Guest   Role = "guest"   // read, and start sessions
)

// Roles lists every role.
var Roles = []Role{Admin, Member, Auditor, Viewer, Guest}

// Action is what a call does to a project's things.
type Action string

// The actions.
const (
	Read    Action = "read"    // sessions, events, diffs, approvals, agents, policy
	Start   Action = "start"   // create sessions
	Steer   Action = "steer"   // send commands, stop, archive, accept or reject diffs, hold
	Approve Action = "approve" // decide approvals, grant extensions, resolve parks
	Audit   Action = "audit"   // audit logs, their content, exports
	Manage  Action = "manage"  // members, policy, retention, agents
)

var allowed = map[Role][]Action{
	Admin:   {Read, Start, Steer, Approve, Audit, Manage},
	Member:  {Read, Start, Steer, Approve},
	Auditor: {Read, Audit},
	Viewer:  {Read},
	Guest:   {Read, Start},
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { _, ok := allowed[r]; return ok }

// Can reports whether the role allows the action.
func (r Role) Can(a Action) bool {
	for _, x := range allowed[r] {
		if x == a {
			return true
		}
	}
	return false
}

// ParseRole reads a role, with an error listing the roles.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.Valid() {
		return r, nil
	}
	return "", fmt.Errorf("role %q: want one of admin, member, auditor, viewer, guest", s)
}

// Principal is an authenticated caller: a user, whether they administer
// the server, and how they proved it (for the audit log).
type Principal struct {
	User  string `json:"user"`
	Admin bool   `json:"admin,omitempty"`
	// Via is how: "token:ID" or "oidc:ISSUER".
	Via string `json:"via,omitempty"`
}

// Sender is the principal as the sender of what they do: the user, and how
// they authenticated.
func (p Principal) Sender() session.Sender {
	return session.Sender{Kind: session.SenderOperator, ID: p.User, Via: p.Via}
}

// UserFromClaim makes a user name from a directory's claim (an email or
// a preferred user name): lowercased, other characters replaced by '-'.
func UserFromClaim(claim string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(claim) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-._")
	if len(name) > 63 {
		name = name[:63]
	}
	return name, CheckName(UserName, name)
}

// TokenPrefix starts every API token, so a leaked one is recognizable.
const TokenPrefix = "pdk_"

// ErrMalformedToken is a token that is not one of ours.
var ErrMalformedToken = errors.New("malformed token: want pdk_ID_SECRET as printed when it was created")

// NewToken returns a token's ID, its full text (shown once) and the hash
// to store: 72 bits of ID to find it, 256 bits of secret to prove it.
func NewToken() (id, full, hash string) {
	idb, secret := make([]byte, 9), make([]byte, 32)
	_, _ = rand.Read(idb)
	_, _ = rand.Read(secret)
	id = base64.RawURLEncoding.EncodeToString(idb)
	s := base64.RawURLEncoding.EncodeToString(secret)
	return id, TokenPrefix + id + "_" + s, Hash(s)
}

// ParseToken splits a token into its ID and secret.
func ParseToken(full string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(full), TokenPrefix)
	if !ok || len(rest) != 12+1+43 || rest[12] != '_' {
		return "", "", ErrMalformedToken
	}
	return rest[:12], rest[13:], nil
}

// Hash is what is stored of a token's secret. The secret is 256 random
// bits, so one round of SHA-256 is enough: no dictionary to guess from.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte("paddock-token-v1\n" + secret))
	return hex.EncodeToString(sum[:])
}

// Matches compares a secret with a stored hash in constant time.
func Matches(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(Hash(secret)), []byte(hash)) == 1
}

// Token is a stored token, without its secret.
type Token struct {
	ID        string     `json:"id"`
	User      string     `json:"user"`
	Label     string     `json:"label,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	LastUsed  *time.Time `json:"lastUsed,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	// Parent is the token that minted this one (its user's own, from a
	// session of theirs): revoking it revokes this one too.
	Parent string `json:"parent,omitempty"`
	Hash   string `json:"-"`
}

// Usable says why a token cannot be used now, or nil.
func (t Token) Usable(now time.Time) error {
	switch {
	case t.RevokedAt != nil:
		return fmt.Errorf("token %s was revoked", t.ID)
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return fmt.Errorf("token %s expired at %s", t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// User is a person or service account.
type User struct {
	Name      string     `json:"name"`
	Admin     bool       `json:"admin,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	// Issuer and Subject tie the user to a directory's identity (OIDC).
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// Membership is a user's role in a project.
type Membership struct {
	Project string `json:"project"`
	User    string `json:"user"`
	Role    Role   `json:"role"`
}
