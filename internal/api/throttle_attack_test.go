package api

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/throttle"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// The attack: 2,000 bad tokens at 650 requests a second, each refused
// alike and each an INFO line. Now a source that failed 20 times waits
// (429 with Retry-After) before its token is even checked, other sources
// are not held back, and the log says it once a minute.
func TestGuessingTokensIsThrottled(t *testing.T) {
	e := attackServer(t)
	var logs lockedBuffer
	frozen := time.Now() // the clock stands still: no failure is forgiven during the test
	e.server.Service.Access.Guesses = &throttle.Failures{Now: func() time.Time { return frozen }}
	e.server.Service.Access.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h := e.server.Handler()
	call := func(source, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/v1/whoami", nil)
		r.RemoteAddr = source + ":40000"
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	codes := map[int]int{}
	for i := range 2000 {
		w := call("203.0.113.9", "pdk_guess"+strings.Repeat("x", i%7))
		codes[w.Code]++
		if w.Code == http.StatusTooManyRequests {
			require.NotEmpty(t, w.Header().Get("Retry-After"))
		}
	}
	require.Equal(t, throttle.DefaultBurst, codes[http.StatusUnauthorized], "%v", codes)
	require.Equal(t, 2000-throttle.DefaultBurst, codes[http.StatusTooManyRequests], "%v", codes)
	require.Equal(t, 1, strings.Count(logs.String(), "authentication refused"), "a flood is one log line a minute:\n%s", logs.String())

	// The right token from the flooding address waits too; from another
	// address it works at once.
	require.Equal(t, http.StatusTooManyRequests, call("203.0.113.9", e.admin).Code)
	require.Equal(t, http.StatusOK, call("198.51.100.4", e.admin).Code)

	// An IPv6 host holds a /64: its addresses are one source.
	for i := range throttle.DefaultBurst {
		call(fmt.Sprintf("[2001:db8:1:2::%x]", i+1), "pdk_guess")
	}
	require.Equal(t, http.StatusTooManyRequests, call("[2001:db8:1:2::ffff]", "pdk_guess").Code)
	require.Equal(t, http.StatusOK, call("[2001:db8:1:3::1]", e.admin).Code)
}
