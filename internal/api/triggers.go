package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// trigger takes a delivery for a trigger: its body HMAC-SHA256-signed
// with the trigger's secret, in GitHub's format (X-Hub-Signature-256:
// sha256=HEX) or Paddock's (X-Paddock-Signature); the event's kind from
// X-GitHub-Event (with the payload's action) or X-Paddock-Event; its key
// from X-GitHub-Delivery or X-Paddock-Delivery (else the body's digest),
// so a redelivery lands once.
func (s *Server) trigger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, err := readBody(w, r, []string{"application/json"})
	if err != nil {
		s.error(w, r, err)
		return
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		sig = r.Header.Get("X-Paddock-Signature")
	}
	// One answer for an unknown trigger, one without a secret and a bad
	// signature: an unsigned caller learns no trigger's name.
	if secret, ok := s.TriggerSecrets[name]; !ok || !validSignature(secret, body, sig) {
		s.error(w, r, fmt.Errorf("%w: the delivery's signature does not match the trigger's secret, or the trigger has none configured (PADDOCK_TRIGGER_SECRETS); sign the body as GitHub does: X-Hub-Signature-256: sha256=HMAC-SHA256", errUnsigned))
		return
	}
	var payload any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &payload); err != nil {
			payload = string(body)
		}
	}
	event := r.Header.Get("X-Paddock-Event")
	if gh := r.Header.Get("X-GitHub-Event"); gh != "" {
		event = "github." + gh
		if m, ok := payload.(map[string]any); ok {
			if a, ok := m["action"].(string); ok && a != "" {
				event += "." + a
			}
		}
	}
	if event == "" {
		event = "webhook"
	}
	key := r.Header.Get("X-GitHub-Delivery")
	if key == "" {
		key = r.Header.Get("X-Paddock-Delivery")
	}
	if key == "" {
		sum := sha256.Sum256(body)
		key = hex.EncodeToString(sum[:16])
	}
	if err := session.Limit("delivery", key, 128); err != nil {
		s.error(w, r, fmt.Errorf("%w: %w", store.ErrInvalid, err))
		return
	}
	res, err := s.Service.Trigger(r.Context(), name, clip(event), key, payload)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// errUnsigned maps to 401.
var errUnsigned = errors.New("unauthenticated")

// validSignature checks sig ("sha256=HEX") against body's HMAC-SHA256
// under secret, in constant time.
func validSignature(secret string, body []byte, sig string) bool {
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
