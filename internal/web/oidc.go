package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Login through the organization's directory runs the authorization code
// flow with PKCE on the server: /login/oidc sends the browser to the
// directory with a fresh state, verifier and nonce kept in a signed,
// HttpOnly cookie of ten minutes; the directory sends it back to
// /login/oidc/callback, where the code is exchanged, the ID token verified
// (with its nonce) and exchanged for a Paddock token, as `paddock login`
// does. The directory must allow this callback URL for Paddock's client.

const (
	loginCookie = "paddock_oidc"
	callback    = "/login/oidc/callback"
)

// pending is a login under way, as its cookie holds it.
type pending struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
	Next     string `json:"x"`
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (a *App) oauth(r *http.Request) (*oauth2.Config, error) {
	ep, err := a.Service.Access.OIDC.Endpoint(r.Context())
	if err != nil {
		return nil, err
	}
	cfg := a.Service.Access.OIDC.Config()
	scheme := "http"
	if secure(r) {
		scheme = "https"
	}
	return &oauth2.Config{ClientID: cfg.ClientID, Endpoint: ep, Scopes: cfg.Scopes, RedirectURL: scheme + "://" + r.Host + callback}, nil
}

func (a *App) directoryLogin(w http.ResponseWriter, r *http.Request) {
	if a.Service.Access.OIDC == nil {
		a.fail(w, r, http.StatusNotFound, "login through a directory is not configured on this server: log in with an API token")
		return
	}
	oc, err := a.oauth(r)
	if err != nil {
		a.fail(w, r, http.StatusBadGateway, err.Error())
		return
	}
	p := pending{State: random(), Verifier: oauth2.GenerateVerifier(), Nonce: random(), Next: localPath(r.URL.Query().Get("next"))}
	raw, _ := json.Marshal(p)
	value := base64.RawURLEncoding.EncodeToString(raw)
	// Lax, not Strict: the directory's redirect back is a cross-site
	// navigation, on which a Strict cookie would not come.
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: value + "." + a.sign(value), Path: callback, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: secure(r), MaxAge: int((10 * time.Minute).Seconds())})
	http.Redirect(w, r, oc.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier), oidc.Nonce(p.Nonce)), http.StatusSeeOther)
}

func (a *App) sign(v string) string {
	m := hmac.New(sha256.New, a.csrfKey)
	m.Write([]byte("oidc:" + v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// login under way, from its cookie (nil when absent, forged or expired).
func (a *App) pendingLogin(r *http.Request) *pending {
	c, err := r.Cookie(loginCookie)
	if err != nil {
		return nil
	}
	// base64url has no ".": the first one ends the value.
	value, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign(value))) {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	var p pending
	if err != nil || json.Unmarshal(raw, &p) != nil || p.State == "" {
		return nil
	}
	return &p
}

func (a *App) directoryCallback(w http.ResponseWriter, r *http.Request) {
	p := a.pendingLogin(r)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: callback, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure(r), MaxAge: -1})
	q := r.URL.Query()
	switch {
	case a.Service.Access.OIDC == nil:
		a.fail(w, r, http.StatusNotFound, "login through a directory is not configured on this server")
		return
	case p == nil || !hmac.Equal([]byte(q.Get("state")), []byte(p.State)):
		a.fail(w, r, http.StatusBadRequest, "this answer from the directory belongs to no login started here (or one older than ten minutes): log in again")
		return
	case q.Get("error") != "":
		a.fail(w, r, http.StatusUnauthorized, "the directory refused the login: "+q.Get("error")+" "+q.Get("error_description"))
		return
	}
	oc, err := a.oauth(r)
	if err != nil {
		a.fail(w, r, http.StatusBadGateway, err.Error())
		return
	}
	tok, err := oc.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(p.Verifier))
	if err != nil {
		a.fail(w, r, http.StatusBadGateway, "exchanging the directory's code failed: "+err.Error())
		return
	}
	id, _ := tok.Extra("id_token").(string)
	if id == "" {
		a.fail(w, r, http.StatusBadGateway, "the directory returned no ID token (is the openid scope allowed for Paddock's client?)")
		return
	}
	t, full, err := a.Service.Access.LoginOIDC(r.Context(), id, tok.AccessToken, p.Nonce, true)
	if err != nil {
		a.problem(w, r, err)
		return
	}
	setCookie(w, r, t, full)
	http.Redirect(w, r, localPath(p.Next), http.StatusSeeOther)
}

// Directory says whether the login page offers the directory.
func (a *App) directory() bool { return a.Service.Access.OIDC != nil }
