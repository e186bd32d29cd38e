package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/spf13/cobra"
	"golang.org/x/oauth2"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/credentials"
	"github.com/paddock-dev/paddock/internal/wire"
)

// loginWait is how long `paddock login` waits for the browser.
const loginWait = 5 * time.Minute

func newLogin(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "login",
		Short: "Log in to the server through your organization's directory (OpenID Connect) and keep the token in ~/.config/paddock/credentials.yaml (mode 600)",
		Long: "Opens the directory's sign-in page through a URL to visit in a browser on this machine (authorization code flow with PKCE, " +
			"redirected to a loopback port), exchanges the directory's ID token for a Paddock token (30 days) and saves it for the server " +
			"(--server or PADDOCK_SERVER). PADDOCK_TOKEN, when set, still takes precedence.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server := g.cfg.Server
			if server == "" {
				return &exitError{Code: 2, Msg: "paddock login needs the server's URL: --server URL or PADDOCK_SERVER (on the server's own machine, commands use DATA_DIR/admin.token instead)"}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), loginWait)
			defer cancel()
			c := client.New(server)
			cfg, err := c.Access().OIDCConfig(ctx)
			if err != nil {
				return err
			}
			if cfg.Issuer == "" {
				return fmt.Errorf("the server at %s has no directory login (PADDOCK_OIDC_ISSUER); ask an administrator for a token: `paddock tokens create --user YOU`", server)
			}
			in, err := directoryLogin(ctx, g, cfg.Issuer, cfg.ClientID, cfg.Scopes)
			if err != nil {
				return err
			}
			t, err := c.Access().LoginOIDC(ctx, in)
			if err != nil {
				return err
			}
			path, err := credentials.Save(g.io.Getenv, credentials.Saved{Server: server, Token: t.Secret})
			if err != nil {
				return fmt.Errorf("logged in, but the token could not be saved: %w", err)
			}
			fmt.Fprintf(g.io.Out, "logged in to %s as %s (token %s, expires %s), saved in %s\nnext: paddock whoami\n", server, t.User, t.ID, when(t.ExpiresAt), path)
			return nil
		},
	}
}

// directoryLogin runs the authorization code flow with PKCE against the
// issuer, receiving the code on a loopback port (RFC 8252), and returns
// the ID token, the access token and the nonce of the login.
func directoryLogin(ctx context.Context, g *globals, issuer, clientID string, scopes []string) (wire.OIDCLogin, error) {
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return wire.OIDCLogin{}, fmt.Errorf("the directory %s cannot be reached: %w", issuer, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return wire.OIDCLogin{}, err
	}
	defer ln.Close()
	oc := oauth2.Config{ClientID: clientID, Endpoint: provider.Endpoint(), Scopes: scopes,
		RedirectURL: fmt.Sprintf("http://%s/callback", ln.Addr())}
	verifier := oauth2.GenerateVerifier()
	stateBytes := make([]byte, 16)
	_, _ = rand.Read(stateBytes)
	state := base64.RawURLEncoding.EncodeToString(stateBytes)
	_, _ = rand.Read(stateBytes)
	nonce := base64.RawURLEncoding.EncodeToString(stateBytes)

	type result struct {
		idToken, access string
		err             error
	}
	done := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		var res result
		switch {
		case q.Get("state") != state:
			res.err = errors.New("the directory's answer does not carry this login's state: ignored (start `paddock login` again)")
		case q.Get("error") != "":
			res.err = fmt.Errorf("the directory refused the login: %s %s", q.Get("error"), q.Get("error_description"))
		default:
			tok, err := oc.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				res.err = fmt.Errorf("exchanging the directory's code: %w", err)
				break
			}
			id, _ := tok.Extra("id_token").(string)
			if id == "" {
				res.err = errors.New("the directory returned no ID token (is the openid scope allowed for this client?)")
			}
			res.idToken, res.access = id, tok.AccessToken
		}
		if res.err != nil {
			http.Error(w, res.err.Error(), http.StatusBadRequest)
		} else {
			fmt.Fprintln(w, "Logged in: you can close this page and go back to the terminal.")
		}
		// The page reaches the browser before login returns and closes
		// the server.
		_ = http.NewResponseController(w).Flush()
		select {
		case done <- res:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(stop) // the page being answered ends first
	}()
	fmt.Fprintf(g.io.Out, "Open this URL in a browser on this machine to log in:\n  %s\nwaiting for the directory (up to %s)…\n",
		oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), loginWait)
	select {
	case res := <-done:
		return wire.OIDCLogin{IDToken: res.idToken, AccessToken: res.access, Nonce: nonce}, res.err
	case <-ctx.Done():
		return wire.OIDCLogin{}, fmt.Errorf("no answer from the directory within %s: start `paddock login` again", loginWait)
	}
}
