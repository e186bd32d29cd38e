package api

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
)

// trigger takes a delivery for a project's trigger, signed with the
// secret PADDOCK_TRIGGER_SECRETS gives PROJECT/NAME, in one of two
// schemes:
//
//   - GitHub's: X-Hub-Signature-256: sha256=HMAC(body). Only the body is
//     signed, so the body is the delivery: its digest keys it (a replay
//     under a new X-GitHub-Delivery lands nowhere new), and the event kind
//     named by X-GitHub-Event must match the payload's shape.
//   - Standard Webhooks: webhook-id, webhook-timestamp and
//     webhook-signature over all three and the body, within five minutes
//     of the server's clock; the id keys the delivery, and the event kind
//     is the payload's own "type".
//
// A delivery seen before is answered as the first time and does nothing.
func (s *Server) trigger(w http.ResponseWriter, r *http.Request) {
	project, name := r.PathValue("project"), r.PathValue("name")
	body, err := readBody(w, r, []string{"application/json"})
	if err != nil {
		s.error(w, r, err)
		return
	}
	// One answer for an unknown trigger, one without a secret and a bad
	// signature: an unsigned caller learns no trigger's name.
	secret, ok := s.TriggerSecrets[durable.TriggerRef(project, name)]
	if !ok {
		secret = noSecret // verified the same way, then refused
	}
	// Numbers stay as the sender wrote them (json.Number): a pull
	// request numbered 1,000,000 renders as 1000000 in a template.
	payload := jsonOrText(body)
	var event, key string
	if r.Header.Get(standardwebhooks.HeaderWebhookSignature) != "" {
		err := verifyStandard(secret, body, r.Header)
		if err == nil && !ok {
			err = standardwebhooks.ErrNoMatchingSignature
		}
		if err != nil {
			if inner := errors.Unwrap(err); inner != nil {
				err = inner // the library's reason, without its wrapping
			}
			s.error(w, r, fmt.Errorf("%w: the delivery's Standard Webhooks signature does not hold (%w), or the trigger has no secret (PADDOCK_TRIGGER_SECRETS); sign webhook-id.webhook-timestamp.body with the secret, within 5 minutes of the server's clock", errUnsigned, err))
			return
		}
		key = "id:" + r.Header.Get(standardwebhooks.HeaderWebhookID)
		event = "webhook"
		if m, isMap := payload.(map[string]any); isMap {
			if t, isText := m["type"].(string); isText && t != "" {
				event = t
			}
		}
	} else {
		// The signature is checked whether the trigger exists or not, so
		// the time of the answer says nothing of it.
		valid := validSignature(secret, body, r.Header.Get("X-Hub-Signature-256"))
		if !ok || !valid {
			s.error(w, r, fmt.Errorf("%w: the delivery's signature does not match the trigger's secret, or the trigger has none configured (PADDOCK_TRIGGER_SECRETS); sign the body as GitHub does (X-Hub-Signature-256: sha256=HMAC-SHA256) or as Standard Webhooks do", errUnsigned))
			return
		}
		sum := sha256.Sum256(body)
		key = "sha256:" + hex.EncodeToString(sum[:])
		if event, err = githubEvent(r.Header.Get("X-GitHub-Event"), payload); err != nil {
			s.error(w, r, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err))
			return
		}
	}
	if err := session.Limit("delivery", key, 200); err != nil {
		s.error(w, r, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err))
		return
	}
	// GitHub's longest kinds (github.pull_request_review_thread.unresolved)
	// fit; an event a caller names past that is cut, and matches no list.
	res, err := s.Service.Sessions().Trigger(r.Context(), project, name, clip.String(event, maxEvent), key, payload)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// maxEvent bounds a delivery's event kind.
const maxEvent = 100

// triggerMoved answers the route triggers had before they belonged to a
// project.
func (s *Server) triggerMoved(w http.ResponseWriter, r *http.Request) {
	s.error(w, r, fmt.Errorf("%w: triggers belong to a project: POST /v1/projects/PROJECT/triggers/%s, signed with the secret PADDOCK_TRIGGER_SECRETS gives PROJECT/%s", errGone, r.PathValue("name"), r.PathValue("name")))
}

// noSecret stands for the secret of a trigger that has none: a delivery
// to it is checked like any other, so its refusal reads the same.
var noSecret = rand.Text()

// errUnsigned maps to 401, errGone to 410.
var (
	errUnsigned = errors.New("unauthenticated")
	errGone     = errors.New("gone")
)

// verifyStandard checks a Standard Webhooks signature: secret is
// whsec_BASE64 (the scheme's form) or the raw key.
func verifyStandard(secret string, body []byte, h http.Header) error {
	var wh *standardwebhooks.Webhook
	var err error
	if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
		var key []byte
		if key, err = base64.StdEncoding.DecodeString(b64); err == nil {
			wh, err = standardwebhooks.NewWebhookRaw(key)
		}
	} else {
		wh, err = standardwebhooks.NewWebhookRaw([]byte(secret))
	}
	if err != nil {
		return err
	}
	return wh.Verify(body, h)
}

// validSignature checks sig ("sha256=HEX") against body's HMAC-SHA256
// under secret, in constant time.
func validSignature(secret string, body []byte, sig string) bool {
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok || secret == "" {
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

// githubShapes are the top-level fields GitHub's payload of an event
// always carries: an X-GitHub-Event header (which GitHub does not sign)
// must agree with the signed body it comes with.
var githubShapes = map[string][]string{
	"push":                        {"ref", "before", "after"},
	"pull_request":                {"pull_request", "action"},
	"pull_request_review":         {"review", "pull_request"},
	"pull_request_review_comment": {"comment", "pull_request"},
	"pull_request_review_thread":  {"thread", "pull_request"},
	"issues":                      {"issue", "action"},
	"issue_comment":               {"comment", "issue"},
	"create":                      {"ref", "ref_type"},
	"delete":                      {"ref", "ref_type"},
	"release":                     {"release", "action"},
	"status":                      {"sha", "state"},
	"check_run":                   {"check_run"},
	"check_suite":                 {"check_suite"},
	"workflow_run":                {"workflow_run"},
	"workflow_job":                {"workflow_job"},
	"deployment":                  {"deployment"},
	"deployment_status":           {"deployment_status"},
	"discussion":                  {"discussion"},
	"discussion_comment":          {"comment", "discussion"},
	"ping":                        {"zen", "hook_id"},
}

// githubEvent is the event kind of a GitHub delivery: github.EVENT, with
// the payload's action when it has one. An event GitHub names but whose
// payload lacks that event's fields is refused.
func githubEvent(header string, payload any) (string, error) {
	if header == "" {
		return "", errors.New("X-GitHub-Event is missing: a body signed as GitHub signs comes with GitHub's event header")
	}
	m, _ := payload.(map[string]any)
	for _, field := range githubShapes[header] {
		if _, ok := m[field]; !ok {
			return "", fmt.Errorf("X-GitHub-Event %q does not match the signed payload (no %q field)", header, field)
		}
	}
	event := "github." + header
	if a, ok := m["action"].(string); ok && a != "" {
		event += "." + a
	}
	return event, nil
}

// jsonOrText is a delivery's body as JSON, its numbers as written, or as
// text when it is not one JSON value.
func jsonOrText(body []byte) any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var payload any
	if err := dec.Decode(&payload); err != nil {
		return string(body)
	}
	if _, err := dec.Token(); err != io.EOF {
		return string(body)
	}
	return payload
}
