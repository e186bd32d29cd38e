package access

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/wire"
)

// OIDC verifies ID tokens the directory issued to Paddock's client
// (coreos/go-oidc: signature against the issuer's published keys, issuer,
// audience, expiry). The issuer is discovered at the first login, so a
// directory that is down at start does not stop the server.
type OIDC struct {
	cfg wire.OIDCConfig
	// Claim names the user: preferred_username by default.
	claim string

	mu       sync.Mutex
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
}

// NewOIDC configures login through issuer for clientID; nil when issuer
// is empty.
func NewOIDC(issuer, clientID, claim string) *OIDC {
	if issuer == "" {
		return nil
	}
	if claim == "" {
		claim = "preferred_username"
	}
	return &OIDC{cfg: wire.OIDCConfig{Issuer: issuer, ClientID: clientID, Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}, claim: claim}
}

// Config is what a client needs to log in (empty when not configured).
func (o *OIDC) Config() wire.OIDCConfig {
	if o == nil {
		return wire.OIDCConfig{}
	}
	return o.cfg
}

func (o *OIDC) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return o.verifier, nil
	}
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the directory %s cannot be reached: %w", o.cfg.Issuer, err)
	}
	o.provider, o.verifier = p, p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID})
	return o.verifier, nil
}

// Verify checks an ID token and returns its issuer, subject and the claim
// naming the user. A directory that leaves the claim out of ID tokens is
// asked for it at its userinfo endpoint with the access token of the same
// login, whose subject must be the ID token's.
//
// nonce, when the login asked for one, must be the ID token's: a token
// issued to another login is refused.
func (o *OIDC) Verify(ctx context.Context, raw, access, nonce string) (issuer, subject, name string, err error) {
	v, err := o.verifierFor(ctx)
	if err != nil {
		return "", "", "", err
	}
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		return "", "", "", fmt.Errorf("%w: the ID token does not verify: %v", errdefs.ErrUnauthenticated, err)
	}
	if nonce != "" && subtle.ConstantTimeCompare([]byte(tok.Nonce), []byte(nonce)) != 1 {
		return "", "", "", fmt.Errorf("%w: the ID token was issued to another login (its nonce differs)", errdefs.ErrUnauthenticated)
	}
	claims := map[string]any{}
	if err := tok.Claims(&claims); err != nil {
		return "", "", "", fmt.Errorf("%w: the ID token's claims: %v", errdefs.ErrUnauthenticated, err)
	}
	name, _ = claims[o.claim].(string)
	if name == "" && access != "" {
		info, err := o.provider.UserInfo(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: access}))
		if err != nil {
			return "", "", "", fmt.Errorf("%w: the directory's userinfo: %v", errdefs.ErrUnauthenticated, err)
		}
		if info.Subject != tok.Subject {
			return "", "", "", fmt.Errorf("%w: the userinfo's subject is not the ID token's", errdefs.ErrUnauthenticated)
		}
		claims = map[string]any{}
		if err := info.Claims(&claims); err == nil {
			name, _ = claims[o.claim].(string)
		}
	}
	if name == "" {
		return "", "", "", fmt.Errorf("%w: the directory gives no %s claim to name the user by (set PADDOCK_OIDC_USERNAME_CLAIM)", errdefs.ErrUnauthenticated, o.claim)
	}
	return tok.Issuer, tok.Subject, name, nil
}

// LoginOIDC exchanges a verified ID token for a Paddock API token (30
// days). The directory identity (issuer and subject) finds its user; the
// first login creates one, named after the configured claim, with no role
// in any project until an administrator gives one. A name already taken by
// another user is refused, never linked: a directory must not be able to
// claim an existing account by choosing its name.
func (s *Service) LoginOIDC(ctx context.Context, raw, access, nonce string, web bool) (identity.Token, string, error) {
	if s.OIDC == nil {
		return identity.Token{}, "", fmt.Errorf("login through a directory is not configured on this server (PADDOCK_OIDC_ISSUER and PADDOCK_OIDC_CLIENT_ID); use an API token: %w", errdefs.ErrNotFound)
	}
	iss, sub, claim, err := s.OIDC.Verify(ctx, raw, access, nonce)
	if err != nil {
		return identity.Token{}, "", err
	}
	u, err := s.Store.UserBySubject(ctx, iss, sub)
	if errors.Is(err, errdefs.ErrNotFound) {
		name, nerr := identity.UserFromClaim(claim)
		if nerr != nil {
			return identity.Token{}, "", nerr // already invalid, saying the rule
		}
		u, err = s.Store.CreateUser(ctx, identity.User{Name: name, Issuer: iss, Subject: sub})
		if errors.Is(err, errdefs.ErrConflict) {
			return identity.Token{}, "", fmt.Errorf("%w: the user name %q is taken by an account not tied to this directory identity; an administrator must resolve it", errdefs.ErrConflict, name)
		}
		if err == nil {
			err = s.Record(ctx, identity.Principal{User: u.Name, Via: "oidc:" + iss}, "user_created", map[string]string{"user": u.Name, "issuer": iss})
		}
	}
	if err != nil {
		return identity.Token{}, "", err
	}
	if u.RevokedAt != nil {
		return identity.Token{}, "", fmt.Errorf("%w: user %s is revoked", errdefs.ErrUnauthenticated, u.Name)
	}
	label, ttl := "oidc login", DefaultTokenLifetime
	if web {
		label, ttl = WebSessionLabel, WebSessionLifetime
	}
	t, full, err := s.mint(ctx, u.Name, label, ttl, "")
	if err != nil {
		return t, "", err
	}
	return t, full, s.Record(ctx, identity.Principal{User: u.Name, Via: "oidc:" + iss}, "login", map[string]string{"token": t.ID, "issuer": iss})
}

// Endpoint is the directory's authorization and token endpoints, for a
// login that runs the authorization code flow itself (the web app's).
func (o *OIDC) Endpoint(ctx context.Context) (oauth2.Endpoint, error) {
	if _, err := o.verifierFor(ctx); err != nil {
		return oauth2.Endpoint{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.provider.Endpoint(), nil
}
