// Package oidctest starts a real OpenID provider for tests: zitadel/oidc's
// example OP, with its login form (user test-user@127.0.0.1, password
// verysecure), on a free loopback port.
package oidctest

import (
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// Start runs the provider until the test ends, with a public (native)
// client clientID allowed to redirect to redirectURIs (loopback ones on
// any port), and returns its issuer URL.
func Start(t testing.TB, clientID string, redirectURIs ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	storage.RegisterClients(storage.NativeClient(clientID, redirectURIs...))
	prev := slog.Default()
	op := httptest.NewUnstartedServer(exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), slog.New(slog.DiscardHandler), false))
	slog.SetDefault(prev) // the example OP replaces it
	op.Listener.Close()
	op.Listener = ln
	op.Start()
	t.Cleanup(op.Close)
	return issuer
}
