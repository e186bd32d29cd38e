// Package api is Paddock's HTTP API: JSON under /v1, the transcript over
// SSE, and the one function that maps errors to HTTP statuses.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/chatdesk"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// Server serves the API.
type Server struct {
	Service *engine.Service
	Logger  *slog.Logger
	// TriggerSecrets are the HMAC secrets of triggers, by PROJECT/NAME.
	TriggerSecrets map[string]string
	// Chat is the chat use cases; Slack takes Slack deliveries (nil:
	// refused).
	Chat  *chatdesk.Service
	Slack Slack
	// Ready reports whether /healthz should answer 200.
	Ready func() bool
	// BodyTimeout bounds reading a request body (default DefaultBodyTimeout).
	BodyTimeout time.Duration
}

// Handler returns the routes. Every route names the query parameters it
// takes; any other is a 400.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, acc guard, fn http.HandlerFunc, params ...string) {
		mux.HandleFunc(pattern, s.checked(acc, fn, params))
	}
	read, start, steer, approve, audit, manage := identity.Read, identity.Start, identity.Steer, identity.Approve, identity.Audit, identity.Manage
	h("GET /healthz", public, s.healthz)
	h("POST /v1/login/oidc", public, s.loginOIDC)
	h("GET /v1/login/oidc", public, s.oidcConfig)
	h("POST /v1/projects/{project}/triggers/{name}", public, s.trigger) // signed with the trigger's secret
	h("POST /v1/triggers/{name}", public, s.triggerMoved)
	h("POST /v1/projects/{project}/slack/{kind}", public, s.slack) // signed with the app's signing secret
	h("GET /v1/whoami", caller, s.whoami)
	h("POST /v1/agents", caller, s.applyAgents) // each agent's project: manage
	h("GET /v1/agents", onProjectQuery(read), s.listAgents, "project")
	h("GET /v1/agents/{name}", onProjectQuery(read), s.getAgent, "project")
	h("POST /v1/sessions", caller, s.createSession) // its project: start
	h("GET /v1/sessions", caller, s.listSessions, "project", "agent", "status", "archived", "limit", "before")
	h("GET /v1/sessions/{id}", onSession(read), s.getSession)
	h("POST /v1/sessions/{id}/commands", onSession(steer), s.sendCommand)
	h("GET /v1/sessions/{id}/commands", onSession(read), s.listCommands)
	h("GET /v1/sessions/{id}/turns", onSession(read), s.listTurns)
	h("GET /v1/sessions/{id}/events", onSession(read), s.events, "after")
	h("POST /v1/sessions/{id}/archive", onSession(steer), s.archive)
	h("POST /v1/sessions/{id}/retry", onSession(start), s.retry)
	h("GET /v1/sessions/{id}/diff", onSession(read), s.diff)
	h("GET /v1/sessions/{id}/usage", onSession(read), s.usage)
	h("GET /v1/sessions/{id}/disk", onSession(read), s.disk)
	h("POST /v1/gc", admin, s.gc)
	h("GET /v1/status", admin, s.status)
	h("POST /v1/sessions/{id}/accept", onSession(steer), s.accept)
	h("POST /v1/sessions/{id}/reject", onSession(steer), s.reject)
	h("POST /v1/sessions/{id}/extend", onSession(approve), s.extend)
	h("POST /v1/sessions/{id}/unpark", onSession(approve), s.unpark)
	h("GET /v1/sessions/{id}/parks", onSession(read), s.listParks)
	h("GET /v1/sessions/{id}/bindings", onSession(read), s.listBindings)
	h("GET /v1/sessions/{id}/history", onSession(read), s.history)
	h("GET /v1/sessions/{id}/attachments", onSession(read), s.listAttachments)
	h("GET /v1/sessions/{id}/attachments/{attachment}", onSession(read), s.attachmentContent)
	h("POST /v1/projects/{name}/attachments", onProject("name", start), s.upload, "name") // the body is the file
	h("GET /v1/parked", caller, s.parked, "project", "agent")
	h("GET /v1/sessions/{id}/audit", onSession(audit), s.auditLog, "content")
	h("GET /v1/audit/verify", caller, s.verifyAudit, "session") // scoped to what the caller may audit
	h("GET /v1/audit/key", caller, s.auditKey)
	h("GET /v1/audit/export", caller, s.exportAudit, "format", "since", "follow") // scoped likewise
	h("GET /v1/audit/checkpoint", caller, s.checkpoint)
	h("GET /v1/audit/access", admin, s.accessLog)
	h("GET /v1/audit/prove", caller, s.prove, "session", "seq", "old") // the session's project: audit
	h("POST /v1/sessions/{id}/hold", onSession(steer), s.noted(s.Service.Sessions().Hold))
	h("POST /v1/sessions/{id}/waive", onSession(approve), s.noted(s.Service.Sessions().Waive))
	h("POST /v1/sessions/{id}/release", onSession(steer), s.release)
	h("POST /v1/sessions/{id}/revoke", onSession(manage), s.revokeSession)
	h("POST /v1/sessions/{id}/start", onSession(approve), s.approveStart)
	h("POST /v1/sessions/{id}/credentials", onSession(read), s.setCredentials) // the requester's own
	h("POST /v1/sessions/{id}/identity", onSession(read), s.chooseIdentity)    // the requester's choice
	h("PUT /v1/projects/{name}/credentials", onProject("name", manage), s.setProjectCredentials)
	h("GET /v1/projects/{name}/connections", onProject("name", read), s.listConnections)
	h("POST /v1/projects/{name}/connections", onProject("name", manage), s.addConnection)
	h("POST /v1/projects/{name}/connections/{connection}/revoke", onProject("name", manage), s.revokeConnection)
	h("PUT /v1/projects/{name}/connections/{connection}/link", onProject("name", steer), s.linkForge)
	h("DELETE /v1/projects/{name}/connections/{connection}/link", onProject("name", read), s.unlinkForge)
	h("GET /v1/projects/{name}/slack", onProject("name", read), s.slackApp)
	h("PUT /v1/projects/{name}/slack", onProject("name", manage), s.setSlackApp)
	h("DELETE /v1/projects/{name}/slack", onProject("name", manage), s.removeSlackApp)
	h("POST /v1/slack/links", caller, s.linkSlack)
	h("GET /v1/slack/links", caller, s.slackLinks)
	h("DELETE /v1/slack/links/{project}/{team}/{user}", caller, s.unlinkSlack)
	h("GET /v1/approvals", caller, s.listApprovals, "session", "status")
	h("GET /v1/approvals/{id}", onApproval(read), s.getApproval)
	h("POST /v1/approvals/{id}/approve", onApproval(approve), s.decide(true))
	h("POST /v1/approvals/{id}/reject", onApproval(approve), s.decide(false))
	h("GET /v1/projects", caller, s.listProjects)
	h("POST /v1/projects", admin, s.createProject)
	h("GET /v1/projects/{name}/members", onProject("name", read), s.listMembers)
	h("PUT /v1/projects/{name}/members/{user}", onProject("name", manage), s.setMember)
	h("DELETE /v1/projects/{name}/members/{user}", onProject("name", manage), s.removeMember)
	h("GET /v1/projects/{name}/policy", onProject("name", read), s.getPolicy)
	h("PUT /v1/projects/{name}/policy", onProject("name", manage), s.putPolicy)
	h("POST /v1/projects/{name}/policy/replay", onProject("name", manage), s.replayPolicy, "since", "examples")
	h("GET /v1/projects/{name}/retention", onProject("name", read), s.contentRetention)
	h("PUT /v1/projects/{name}/retention", onProject("name", manage), s.setContentRetention)
	h("GET /v1/users", admin, s.listUsers)
	h("POST /v1/users", admin, s.createUser)
	h("POST /v1/users/{user}/revoke", admin, s.revokeUser)
	h("GET /v1/tokens", caller, s.listTokens, "user")
	h("POST /v1/tokens", caller, s.createToken)
	h("POST /v1/tokens/{id}/revoke", caller, s.revokeToken)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A path served under other methods is a 405 naming them.
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.error(w, r, fmt.Errorf("%w: %s %s: allowed methods are %s", errMethod, r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		s.error(w, r, fmt.Errorf("%w: no route %s %s", errdefs.ErrNotFound, r.Method, r.URL.Path))
	})
	return s.recoverer(mux)
}

// allowed lists the methods the mux serves r's path under.
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			out = append(out, m)
			if m == http.MethodGet {
				out = append(out, http.MethodHead)
			}
		}
	}
	return out
}

// MaxField bounds path values and query parameters.
const MaxField = 256

// checked validates what every route shares before the handler runs: the
// query names only the route's parameters, once each, and path values and
// parameters are valid UTF-8 of bounded length.
func (s *Server) checked(acc guard, fn http.HandlerFunc, params []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			s.error(w, r, fmt.Errorf("%w: query: %v", errdefs.ErrInvalid, err))
			return
		}
		for k, v := range q {
			if !slices.Contains(params, k) {
				want := "takes no query parameters"
				if len(params) > 0 {
					want = "takes " + strings.Join(params, ", ")
				}
				s.error(w, r, fmt.Errorf("%w: unknown query parameter %q: this route %s", errdefs.ErrInvalid, clip.String(k, 40), want))
				return
			}
			if len(v) > 1 {
				s.error(w, r, fmt.Errorf("%w: query parameter %s given %d times", errdefs.ErrInvalid, k, len(v)))
				return
			}
			if err := field("query parameter "+k, v[0], MaxField); err != nil {
				s.error(w, r, err)
				return
			}
		}
		for _, name := range []string{"id", "name", "user", "attachment"} {
			if err := field(name, r.PathValue(name), MaxField); err != nil {
				s.error(w, r, err)
				return
			}
		}
		r, err = s.authorize(r, acc)
		if err != nil {
			if errors.Is(err, errdefs.ErrUnauthenticated) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="paddock"`)
			}
			// A refused request's body is never read: the connection
			// closes after the answer instead of waiting for a body that
			// may never come.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			s.error(w, r, err)
			return
		}
		if s.BodyTimeout > 0 {
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, s.BodyTimeout))
		}
		fn(w, r)
	}
}

// field checks one caller-supplied string: valid UTF-8, no control
// characters, at most max bytes.
func field(what, v string, max int) error {
	switch {
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8", errdefs.ErrInvalid, what)
	case len(v) > max:
		return fmt.Errorf("%w: %s has %d bytes, at most %d", errdefs.ErrInvalid, what, len(v), max)
	case strings.ContainsFunc(v, unicode.IsControl):
		return fmt.Errorf("%w: %s contains control characters", errdefs.ErrInvalid, what)
	}
	return nil
}

// boolParam reads an optional true/false query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("%w: %s=%q: want true or false", errdefs.ErrInvalid, name, clip.String(v, 40))
	}
}

// Errors of the request itself, beside the store's sentinels.
var (
	errMethod      = errors.New("method not allowed")
	errBodyTimeout = errors.New("request body timeout")
)

// statusOf is the one mapping from errors to HTTP statuses.
// StatusOf is the one mapping of errors to HTTP statuses (and the API's
// error codes), for every transport that answers HTTP.
func StatusOf(err error) (int, string) {
	var maxErr *http.MaxBytesError
	var throttled *errdefs.ThrottledError
	switch {
	case errors.As(err, &throttled):
		return http.StatusTooManyRequests, "too_many_failures"
	case errors.As(err, &maxErr), errors.Is(err, errdefs.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case errors.Is(err, errdefs.ErrMediaType):
		return http.StatusUnsupportedMediaType, "unsupported_media_type"
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout, "timeout"
	case errors.Is(err, errdefs.ErrInvalid):
		return http.StatusBadRequest, "invalid"
	case errors.Is(err, errdefs.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, errdefs.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, errdefs.ErrDenied):
		return http.StatusForbidden, "denied"
	case errors.Is(err, errUnsigned), errors.Is(err, errdefs.ErrUnauthenticated):
		return http.StatusUnauthorized, "unauthenticated"
	case errors.Is(err, errGone):
		return http.StatusGone, "gone"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, errdefs.ErrUnavailable):
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal"
}

func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code, name := StatusOf(err)
	body := wire.Error{Error: err.Error(), Code: name}
	var slot *errdefs.SlotConflictError
	if errors.As(err, &slot) {
		body.SessionID = slot.SessionID
	}
	var key *errdefs.KeyConflictError
	if errors.As(err, &key) {
		body.SessionID = key.SessionID
	}
	var throttled *errdefs.ThrottledError
	if errors.As(err, &throttled) {
		w.Header().Set("Retry-After", strconv.Itoa(int(throttled.Wait.Seconds())+1))
	}
	switch {
	case errors.Is(err, errdefs.ErrUnavailable):
		// A service Paddock depends on is down: the caller is told which,
		// and to try again.
		s.Logger.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case code >= 500:
		s.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		body.Error = "internal error; the server log has the details"
	}
	writeJSON(w, code, body)
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				s.error(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// writeJSON encodes before it writes: a value that cannot be encoded is a
// 500, never a 200 with an empty or cut body.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(wire.Error{Error: "internal error: the response could not be encoded", Code: "internal"})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// DefaultBodyTimeout bounds reading a request body: a body that stalls is
// answered 408 instead of holding the connection (SSE has no body).
const DefaultBodyTimeout = 30 * time.Second

type ctxKey struct{}

// bodyTimeout is the request's body deadline, set by checked.
func bodyTimeout(r *http.Request) time.Duration {
	if d, ok := r.Context().Value(ctxKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return DefaultBodyTimeout
}

// Media types bodies may have.
var (
	jsonTypes = []string{"application/json"}
	yamlTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "application/json", "text/plain"}
)

// readBody reads a request body: within BodyTimeout, at most MaxBody
// bytes, of one of the media types given, valid UTF-8 (U+FFFD substitution
// would make different requests look alike).
func readBody(w http.ResponseWriter, r *http.Request, types []string) ([]byte, error) {
	body, err := readRaw(w, r, MaxBody)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if n := len(r.Header.Values("Content-Type")); n > 1 {
		return nil, fmt.Errorf("%w: Content-Type given %d times: give it once", errdefs.ErrMediaType, n)
	}
	ct := r.Header.Get("Content-Type")
	mt, _, perr := mime.ParseMediaType(ct)
	if ct == "" || perr != nil || !slices.Contains(types, mt) && !(slices.Contains(types, "application/json") && strings.HasSuffix(mt, "+json")) {
		return nil, fmt.Errorf("%w: Content-Type %q: this route takes %s", errdefs.ErrMediaType, clip.String(ct, 40), strings.Join(types, ", "))
	}
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: request body is not valid UTF-8", errdefs.ErrInvalid)
	}
	return body, nil
}

// readRaw reads a request body as it is: within BodyTimeout, at most max
// bytes (an *http.MaxBytesError beyond).
func readRaw(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	limit := bodyTimeout(r)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(limit))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var maxErr *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &maxErr):
		return nil, err
	case errors.As(err, &netErr) && netErr.Timeout():
		return nil, fmt.Errorf("%w: the request body did not arrive within %s", errBodyTimeout, limit)
	case err != nil:
		return nil, fmt.Errorf("%w: request body: incomplete or unreadable (%v)", errdefs.ErrInvalid, err)
	}
	return body, nil
}

// decode reads a JSON body strictly: unknown fields, wrong types and
// trailing data are 400s; bodies over MaxBody are 413s.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, jsonTypes)
	if err != nil {
		return err
	}
	if body == nil {
		body = []byte("{}")
	}
	if err := session.CheckJSON(body, v); err != nil {
		return fmt.Errorf("%w: request body: %w", errdefs.ErrInvalid, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", errdefs.ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: request body: trailing data after the JSON object", errdefs.ErrInvalid)
	}
	return nil
}

// noBody checks the body of a route that takes none: empty, or an empty
// JSON object; anything else is refused like any other body (415, 400).
func noBody(w http.ResponseWriter, r *http.Request) error {
	var none struct{}
	return decode(w, r, &none)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.Ready != nil && !s.Ready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) applyAgents(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, yamlTypes)
	if err != nil {
		s.error(w, r, err)
		return
	}
	res, err := s.Service.Projects().ApplyAgents(r.Context(), principal(r), body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"applied": res})
}

// project is the project a request names with ?project= (default: the
// default project): a name that is not valid is a 400, a project never
// created a 404.
func (s *Server) project(r *http.Request) (string, error) {
	p := r.URL.Query().Get("project")
	if p == "" && !r.URL.Query().Has("project") {
		return "default", nil
	}
	return p, s.Service.Projects().Check(r.Context(), p)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	p, err := s.project(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	list, err := s.Service.Projects().Agents(r.Context(), principal(r), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": nonNil(list)})
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	p, err := s.project(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if err := identity.CheckName(identity.AgentName, r.PathValue("name")); err != nil {
		s.error(w, r, err)
		return
	}
	a, err := s.Service.Projects().Agent(r.Context(), principal(r), p, r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req wire.CreateRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Sessions().Create(r.Context(), principal(r), req)
	if err != nil && x.ID == "" {
		s.error(w, r, err)
		return
	}
	if err != nil {
		s.Logger.Warn("session recorded but its workflow did not start yet", "session", x.ID, "err", err)
	}
	writeJSON(w, http.StatusCreated, x)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	archived, err := boolParam(r, "archived")
	if err != nil {
		s.error(w, r, err)
		return
	}
	if q.Has("project") {
		if err := s.readProject(r, q.Get("project")); err != nil {
			s.error(w, r, err)
			return
		}
	}
	f := session.Filter{Project: q.Get("project"), Agent: q.Get("agent"), Status: session.Status(q.Get("status")), IncludeArchived: archived}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			s.error(w, r, fmt.Errorf("%w: limit %q: want a positive number", errdefs.ErrInvalid, l))
			return
		}
		f.Limit = n
	}
	f.Before = q.Get("before")
	list, err := s.Service.Sessions().List(r.Context(), principal(r), f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := map[string]any{"sessions": nonNil(list)}
	if page := f.Limit; len(list) > 0 && (len(list) == page || len(list) == session.MaxPage) {
		out["next"] = list[len(list)-1].ID // ?before=next lists the page after this one
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	x, err := s.Service.Sessions().Get(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) sendCommand(w http.ResponseWriter, r *http.Request) {
	var req wire.SendRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	c, err := s.Service.Sessions().Send(r.Context(), principal(r), r.PathValue("id"), req)
	if err != nil && c.ID == "" {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, c)
}

func (s *Server) listCommands(w http.ResponseWriter, r *http.Request) {
	list, err := s.Service.Sessions().Commands(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"commands": nonNil(list)})
}

func (s *Server) listTurns(w http.ResponseWriter, r *http.Request) {
	list, err := s.Service.Sessions().Turns(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": nonNil(list)})
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Sessions().Archive(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Sessions().Retry(r.Context(), principal(r), r.PathValue("id"))
	if err != nil && (x.ID == "" || x.ID == r.PathValue("id")) {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, x)
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := session.ApprovalFilter{SessionID: q.Get("session"), Status: session.ApprovalStatus(q.Get("status"))}
	list, err := s.Service.Gates().Approvals(r.Context(), principal(r), identity.Read, f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": nonNil(list)})
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	a, _, err := s.Service.Gates().ApprovalFor(r.Context(), principal(r), r.PathValue("id"), identity.Read)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, err := note(w, r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		a, err := s.Service.Gates().Decide(r.Context(), principal(r), r.PathValue("id"), approve, n)
		if err != nil && a.Status == session.ApprovalPending || err != nil && a.ID == "" {
			s.error(w, r, err)
			return
		}
		if err != nil {
			s.Logger.Warn("approval decided, session not woken", "err", err)
		}
		writeJSON(w, http.StatusOK, a)
	}
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) {
	p, err := s.Service.Projects().Policy(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"policy": p, "digest": p.Digest()})
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, yamlTypes)
	if err != nil {
		s.error(w, r, err)
		return
	}
	p, err := s.Service.Projects().SetPolicy(r.Context(), principal(r), r.PathValue("name"), body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"policy": p, "digest": p.Digest()})
}

// replayPolicy judges the project's recorded tool calls under the policy
// in the body (YAML) and reports what would change; ?since=7d limits it to
// recent sessions, ?examples=N the examples per rule (default 3).
func (s *Server) replayPolicy(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, yamlTypes)
	if err != nil {
		s.error(w, r, err)
		return
	}
	since, err := policy.ParseSince(r.URL.Query().Get("since"), time.Now())
	if err != nil {
		s.error(w, r, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err))
		return
	}
	examples := 3
	if e := r.URL.Query().Get("examples"); e != "" {
		if examples, err = strconv.Atoi(e); err != nil || examples < 0 {
			s.error(w, r, fmt.Errorf("%w: examples: want a number ≥ 0", errdefs.ErrInvalid))
			return
		}
	}
	rep, err := s.Service.Projects().ReplayPolicy(r.Context(), principal(r), r.PathValue("name"), body, since, examples)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	d, x, err := s.Service.Review().Diff(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.DiffResponse{Diff: d, Repo: x.Repo, Delivery: x.Delivery})
}

func (s *Server) accept(w http.ResponseWriter, r *http.Request) {
	var req wire.AcceptRequest
	if err := decode(w, r, &req); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Review().Accept(r.Context(), principal(r), r.PathValue("id"), req)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

// note reads a request's optional {"note": …} body (the service bounds
// it).
func note(w http.ResponseWriter, r *http.Request) (string, error) {
	var d wire.Decision
	if err := decode(w, r, &d); err != nil {
		return "", err
	}
	return d.Note, nil
}

// noted serves a route that acts on a session with a note, as the
// operator, and answers the session.
func (s *Server) noted(act func(ctx context.Context, caller identity.Principal, id, note string) (session.Session, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, err := note(w, r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		x, err := act(r.Context(), principal(r), r.PathValue("id"), n)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, x)
	}
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	x, err := s.Service.Review().Reject(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

func (s *Server) disk(w http.ResponseWriter, r *http.Request) {
	used, budget, err := s.Service.Sessions().Disk(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.DiskResponse{Used: used, Budget: budget})
}

func (s *Server) gc(w http.ResponseWriter, r *http.Request) {
	if err := noBody(w, r); err != nil {
		s.error(w, r, err)
		return
	}
	out, err := s.Service.Review().GC(r.Context(), principal(r), time.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"collected": out})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.Service.Health.Status(r.Context(), principal(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	u, err := s.Service.Sessions().Usage(r.Context(), principal(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}
