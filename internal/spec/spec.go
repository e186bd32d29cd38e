// Package spec parses and validates agent specs written in YAML: strictly
// (unknown fields and wrong types are errors with the field's path), all
// documents of a file before any is applied.
package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// Agent is a declared agent.
type Agent struct {
	Kind           string   `yaml:"kind" json:"kind"`
	Name           string   `yaml:"name" json:"name"`
	Project        string   `yaml:"project" json:"project"`
	Description    string   `yaml:"description" json:"description,omitempty"`
	Model          string   `yaml:"model" json:"model"`
	FallbackModels []string `yaml:"fallbackModels" json:"fallbackModels,omitempty"`
	Instructions   string   `yaml:"instructions" json:"instructions,omitempty"`
	InitialPrompt  string   `yaml:"initialPrompt" json:"initialPrompt,omitempty"`
	// ReasoningEffort is how much the model reasons on each turn unless
	// a message says otherwise: one of the levels its model takes.
	ReasoningEffort string `yaml:"reasoningEffort" json:"reasoningEffort,omitempty"`
	// Tools lists the built-in tools the agent may use; empty means all.
	Tools []string `yaml:"tools" json:"tools,omitempty"`
	// Concurrency 1 makes the agent a singleton: one live session at a time.
	Concurrency int    `yaml:"concurrency" json:"concurrency,omitempty"`
	Replace     string `yaml:"replace" json:"replace,omitempty"`
	OnReplace   string `yaml:"onReplace" json:"onReplace,omitempty"`
	// MaxPerSessionUSD is the spend cap frozen onto each session.
	MaxPerSessionUSD float64 `yaml:"maxPerSessionUsd" json:"maxPerSessionUsd,omitempty"`
	// DisplayTitle is a template ({{input}} is the kickoff text) or "infer".
	DisplayTitle string      `yaml:"displayTitle" json:"displayTitle,omitempty"`
	Session      SessionSpec `yaml:"session" json:"session"`
	// Policy tightens the project's policy for this agent's sessions; it
	// can never loosen it.
	Policy *PolicySpec `yaml:"policy" json:"policy,omitempty"`
	// MCPServers contribute tools named mcp__NAME__TOOL.
	MCPServers []MCPServerSpec `yaml:"mcpServers" json:"mcpServers,omitempty"`
	// Delivery says what a session owes before it may complete.
	Delivery DeliverySpec `yaml:"delivery" json:"delivery,omitzero"`
	// Triggers bring external events to the agent: HTTP deliveries
	// (POST /v1/projects/PROJECT/triggers/NAME, signed) or a cron schedule.
	Triggers []TriggerSpec `yaml:"triggers" json:"triggers,omitempty"`
	// ContextWindow is the model's context window in tokens, when it is
	// not one Paddock knows; the conversation is compacted near it.
	ContextWindow int `yaml:"contextWindow" json:"contextWindow,omitempty"`
	// Environment prepares the sandbox the agent's commands run in.
	Environment EnvironmentSpec `yaml:"environment" json:"environment,omitzero"`
	// Identity is whose credentials (environment.credentials) a session's
	// commands act with: the requester's (passthrough, the default: the
	// session waits for them), the project's service credentials (set by
	// its admins), or ask (the requester chooses when the session starts).
	Identity string `yaml:"identity" json:"identity,omitempty"`
}

// Identities an agent's sessions act as.
const (
	IdentityRequester = "requester"
	IdentityService   = "service"
	IdentityAsk       = "ask"
)

// EnvironmentSpec is what a session's sandbox is prepared with: a setup
// script run before the first turn (its result cached as a layer), the
// network each phase may reach through the egress proxy, variables and
// host toolchains for the commands.
type EnvironmentSpec struct {
	// Setup is a bash script run in the session's sandbox on the working
	// copy before the first turn; it fills the dependency caches.
	Setup   string      `yaml:"setup" json:"setup,omitempty"`
	Network NetworkSpec `yaml:"network" json:"network,omitzero"`
	// Env are extra variables for setup and commands; code-carrying and
	// Paddock-owned names are refused.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Credentials are variables the requester supplies when a session
	// starts (passthrough: the session acts with their credentials): the
	// session waits at the door until they are given, commands get them in
	// their environment, and they go when the session ends.
	Credentials []string `yaml:"credentials" json:"credentials,omitempty"`
	// ReadOnlyPaths are host paths (toolchains) shown read-only.
	ReadOnlyPaths []string `yaml:"readOnlyPaths" json:"readOnlyPaths,omitempty"`
	// IgnoredFiles are files of the repository's checkout its .gitignore
	// leaves out that the working copy takes all the same (git glob
	// patterns, such as .env.local or config/**/*.local.yml): the copy
	// otherwise starts without any ignored file.
	IgnoredFiles []string `yaml:"ignoredFiles" json:"ignoredFiles,omitempty"`
	// SetupTimeout bounds the setup script (default 30m).
	SetupTimeout Duration `yaml:"setupTimeout" json:"setupTimeout,omitempty"`
	// Reuse says which sessions may start from the layer setup leaves:
	// "tree" (the default), only those on the same files; "manifests",
	// those on any commit with the same dependency manifests and lock
	// files, trusting that setup reads nothing else of the repository.
	Reuse string `yaml:"reuse" json:"reuse,omitempty"`
}

// Layer reuse modes.
const (
	ReuseTree      = "tree"
	ReuseManifests = "manifests"
)

// DeliverySpec is a delivery requirement.
type DeliverySpec struct {
	// Require "accepted": a session cannot complete (archive itself)
	// until its diff was accepted, or a person waived the requirement.
	Require string `yaml:"require" json:"require,omitempty"`
}

// RequireAccepted is the one delivery requirement.
const RequireAccepted = "accepted"

// TriggerSpec is one trigger of an agent.
type TriggerSpec struct {
	// Name is unique in the agent's project: deliveries are POSTed to
	// /v1/projects/PROJECT/triggers/NAME, signed with the secret
	// PADDOCK_TRIGGER_SECRETS gives PROJECT/NAME.
	Name string `yaml:"name" json:"name"`
	// Routing is "spawn" (a new session per delivery), "session" (into
	// the agent's live session, spawning one when none is live) or
	// "bound" (into the agent's live sessions bound to the pull request
	// the delivery names on Repo: its review comments and CI results);
	// default session for a singleton agent, spawn otherwise.
	Routing string `yaml:"routing" json:"routing,omitempty"`
	// Message is a Go template of the instruction, over .event (the
	// event's kind) and .payload (its JSON body).
	Message string `yaml:"message" json:"message"`
	// Events are the event kinds accepted (empty: all).
	Events []string `yaml:"events" json:"events,omitempty"`
	// Schedule is a cron schedule ("*/15 * * * *") that fires the
	// trigger without any HTTP delivery.
	Schedule string `yaml:"schedule" json:"schedule,omitempty"`
	// Repo is the repository spawned sessions work on: a directory on the
	// server, or a remote repository a connection of the project grants.
	Repo string `yaml:"repo" json:"repo,omitempty"`
	// Ref, with a remote Repo, is a Go template of where the spawned
	// session's copy starts, over .event and .payload
	// ({{.payload.pull_request.head.sha}}); a ref that does not resolve
	// refuses the delivery.
	Ref string `yaml:"ref" json:"ref,omitempty"`
	// Release makes the trigger's deliveries release the bindings of the
	// project's sessions to the pull request each names on Repo (the
	// forge's "closed" or "merged" event), instead of routing a message.
	Release bool `yaml:"release" json:"release,omitempty"`
}

// Trigger routings.
const (
	RouteSpawn   = "spawn"
	RouteSession = "session"
	RouteBound   = "bound"
)

// Route is the trigger's routing for agent a.
func (t TriggerSpec) Route(a *Agent) string {
	if t.Routing != "" {
		return t.Routing
	}
	if a.Concurrency == 1 {
		return RouteSession
	}
	return RouteSpawn
}

// Render renders the trigger's message for an event.
func (t TriggerSpec) Render(event string, payload any) (string, error) {
	return t.render(t.Message, event, payload)
}

// RenderRef renders the trigger's ref for an event.
func (t TriggerSpec) RenderRef(event string, payload any) (string, error) {
	ref, err := t.render(t.Ref, event, payload)
	return strings.TrimSpace(ref), err
}

func (t TriggerSpec) render(text, event string, payload any) (string, error) {
	tpl, err := template.New(t.Name).Option("missingkey=zero").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tpl.Execute(&limitedBuilder{&b, 64 << 10}, map[string]any{"event": event, "payload": payload}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// limitedBuilder refuses to grow a rendered message past its limit.
type limitedBuilder struct {
	b   *strings.Builder
	max int
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.max {
		return 0, fmt.Errorf("the rendered message is longer than %d bytes", l.max)
	}
	return l.b.Write(p)
}

// NetworkSpec lists the HOST:PORT destinations each phase may reach.
type NetworkSpec struct {
	// Setup is the egress allowed while setup runs.
	Setup []string `yaml:"setup" json:"setup,omitempty"`
	// Commands is the egress allowed to the agent's commands.
	Commands []string `yaml:"commands" json:"commands,omitempty"`
}

// MCPServerSpec is an MCP server reached over streamable HTTP.
type MCPServerSpec struct {
	Name string `yaml:"name" json:"name"`
	// URL reaches a streamable HTTP server; Command starts a stdio server
	// inside the session's sandbox. One of the two.
	URL     string            `yaml:"url" json:"url,omitempty"`
	Command []string          `yaml:"command" json:"command,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
}

// PolicySpec is an agent's policy, in the same form as a policy file.
type PolicySpec struct {
	Default  string            `yaml:"default" json:"default,omitempty"`
	Tools    map[string]string `yaml:"tools" json:"tools,omitempty"`
	Commands *struct {
		Allow []string `yaml:"allow" json:"allow"`
	} `yaml:"commands" json:"commands,omitempty"`
	ContinueAfterToolRejection bool   `yaml:"continueAfterToolRejection" json:"continueAfterToolRejection,omitempty"`
	ApprovalTTL                string `yaml:"approvalTtl" json:"approvalTtl,omitempty"`
}

// PolicyValue is the agent's policy, or nil when it declares none.
func (a *Agent) PolicyValue() (*policy.Policy, error) {
	if a.Policy == nil {
		return nil, nil
	}
	data, err := yaml.Marshal(a.Policy)
	if err != nil {
		return nil, err
	}
	return policy.Parse(data)
}

// SessionSpec holds per-session runtime settings.
type SessionSpec struct {
	IdleTimeout          Duration `yaml:"idleTimeout" json:"idleTimeout,omitempty"`
	ArchiveAfterInactive Duration `yaml:"archiveAfterInactive" json:"archiveAfterInactive,omitempty"`
	// The session's budget; unset fields take the server's defaults
	// (PADDOCK_SESSION_MAX_*). MaxActions counts tool calls and
	// compactions; MaxMinutes active time; MaxExtensions what a person may
	// grant when one runs out; MaxTokens and MaxTurns are unbounded unless
	// set; MaxLifetime is the wall-clock expiry from creation.
	MaxActions    int      `yaml:"maxActions" json:"maxActions,omitempty"`
	MaxMinutes    int      `yaml:"maxMinutes" json:"maxMinutes,omitempty"`
	MaxExtensions *int     `yaml:"maxExtensions" json:"maxExtensions,omitempty"`
	MaxTokens     int64    `yaml:"maxTokens" json:"maxTokens,omitempty"`
	MaxTurns      int      `yaml:"maxTurns" json:"maxTurns,omitempty"`
	MaxLifetime   Duration `yaml:"maxLifetime" json:"maxLifetime,omitempty"`
	// Watchdog concludes a turn stale when its model step makes no
	// progress for this long (default 5m).
	Watchdog Duration `yaml:"watchdog" json:"watchdog,omitempty"`
}

// Limits are the session's budget: the server's defaults with what the
// agent sets on top, and the spend cap frozen on the session.
func (s SessionSpec) Limits(defaults bound.Limits, spendCapUSD float64) bound.Limits {
	l := defaults
	if s.MaxActions > 0 {
		l.Actions = s.MaxActions
	}
	if s.MaxMinutes > 0 {
		l.Active = time.Duration(s.MaxMinutes) * time.Minute
	}
	if s.MaxExtensions != nil {
		l.Extensions = *s.MaxExtensions
	}
	if s.MaxTokens > 0 {
		l.Tokens = s.MaxTokens
	}
	if s.MaxTurns > 0 {
		l.Turns = s.MaxTurns
	}
	if s.MaxLifetime > 0 {
		l.Lifetime = time.Duration(s.MaxLifetime)
	}
	l.SpendUSD = spendCapUSD
	return l
}

// Duration is a time.Duration written as "15m" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	*d = Duration(v)
	return err
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Defaults.
const (
	DefaultProject     = "default"
	DefaultIdleTimeout = Duration(15 * time.Minute)
	// DefaultSetupTimeout bounds an environment's setup script.
	DefaultSetupTimeout = Duration(30 * time.Minute)
)

var (
	mcpNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9](_?[a-z0-9-])*$`) })
)

// Known are the things validation checks names against, and the
// detector that finds credentials in a value (Secret: the rule of the
// first one found, empty when none; secret.Rule).
type Known struct {
	Tool     func(name string) bool
	Provider func(name string) bool
	Secret   func(value string) (rule string)
	// Effort says why a model does not take a reasoning effort (nil:
	// any is taken).
	Effort func(model, effort string) error
}

// Parse reads every YAML document in r as an agent spec, applies defaults
// and validates them all; it returns the first problem as a *FieldError.
func Parse(r io.Reader, known Known) ([]Agent, error) {
	if known.Secret == nil {
		return nil, errors.New("spec: Parse needs a credential detector (Known.Secret)")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []Agent
	seen := map[string]bool{}
	for doc := 1; ; doc++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &FieldError{Doc: doc, Path: "(document)", Reason: "not valid YAML: " + err.Error()}
		}
		if len(node.Content) == 0 {
			continue
		}
		var a Agent
		if err := decodeStrict(doc, node.Content[0], &a); err != nil {
			return nil, err
		}
		if err := noSecret(known.Secret, doc, node.Content[0], ""); err != nil {
			return nil, err
		}
		a.Defaults()
		if err := a.Validate(known); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Doc = doc
			}
			return nil, err
		}
		if seen[a.Project+"/"+a.Name] {
			return nil, &FieldError{Doc: doc, Path: "name", Reason: fmt.Sprintf("agent %q appears twice in this file", a.Name)}
		}
		seen[a.Project+"/"+a.Name] = true
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, &FieldError{Path: "(file)", Reason: "no agent spec found"}
	}
	return out, nil
}

// Defaults fills unset fields.
func (a *Agent) Defaults() {
	if a.Kind == "" {
		a.Kind = "Agent"
	}
	if a.Project == "" {
		a.Project = DefaultProject
	}
	if a.Replace == "" {
		a.Replace = "manual"
	}
	if a.Session.IdleTimeout == 0 {
		a.Session.IdleTimeout = DefaultIdleTimeout
	}
	if a.Session.Watchdog == 0 {
		a.Session.Watchdog = Duration(bound.DefaultWatchdog)
	}
	if a.Environment.Setup != "" && a.Environment.SetupTimeout == 0 {
		a.Environment.SetupTimeout = DefaultSetupTimeout
	}
}

// Validate checks a defaulted spec.
func (a *Agent) Validate(known Known) error {
	bad := func(path, reason string) error { return &FieldError{Path: path, Reason: reason} }
	if err := policy.CheckUTF8("agent", a); err != nil {
		return bad("(text)", err.Error()+" (nothing is silently replaced)")
	}
	if a.Kind != "Agent" {
		return bad("kind", fmt.Sprintf("%q is not a kind this file can hold (want Agent)", a.Kind))
	}
	switch a.Identity {
	case "", IdentityRequester, IdentityService, IdentityAsk:
		if a.Identity != "" && len(a.Environment.Credentials) == 0 {
			return bad("identity", "an identity says whose environment.credentials commands get; this agent declares none")
		}
	default:
		return bad("identity", fmt.Sprintf("%q: want requester (the requester's credentials), service (the project's) or ask (the requester chooses at start)", a.Identity))
	}
	if identity.CheckName(identity.AgentName, a.Name) != nil {
		return bad("name", fmt.Sprintf("%q: want %s", a.Name, identity.LabelRule))
	}
	if identity.CheckName(identity.ProjectName, a.Project) != nil {
		return bad("project", fmt.Sprintf("%q: want %s", a.Project, identity.LabelRule))
	}
	if err := checkModel(a.Model, known); err != nil {
		return bad("model", err.Error())
	}
	if known.Effort != nil {
		if err := known.Effort(a.Model, a.ReasoningEffort); err != nil {
			return bad("reasoningEffort", err.Error())
		}
	}
	for i, m := range a.FallbackModels {
		if err := checkModel(m, known); err != nil {
			return bad(fmt.Sprintf("fallbackModels[%d]", i), err.Error())
		}
	}
	for i, t := range a.Tools {
		if known.Tool != nil && !known.Tool(t) {
			return bad(fmt.Sprintf("tools[%d]", i), fmt.Sprintf("unknown tool %q", t))
		}
	}
	if a.Concurrency != 0 && a.Concurrency != 1 {
		return bad("concurrency", fmt.Sprintf("%d: want 1 (a singleton) or leave it out (no limit)", a.Concurrency))
	}
	if a.Replace != "manual" && a.Replace != "auto" {
		return bad("replace", fmt.Sprintf("%q: want manual or auto", a.Replace))
	}
	if a.Replace == "auto" && a.Concurrency != 1 {
		return bad("replace", "auto replacement needs concurrency: 1")
	}
	if math.IsNaN(a.MaxPerSessionUSD) || math.IsInf(a.MaxPerSessionUSD, 0) {
		return bad("maxPerSessionUsd", "want a finite number of dollars (leave it out for no cap)")
	}
	if a.MaxPerSessionUSD < 0 {
		return bad("maxPerSessionUsd", "must not be negative")
	}
	if n := len([]rune(a.DisplayTitle)); n > 200 {
		return bad("displayTitle", fmt.Sprintf("template of %d characters; keep it under 200", n))
	}
	if a.Session.IdleTimeout < Duration(time.Second) {
		return bad("session.idleTimeout", "must be at least 1s")
	}
	if a.Session.ArchiveAfterInactive < 0 {
		return bad("session.archiveAfterInactive", "must not be negative")
	}
	seen := map[string]bool{}
	for i, m := range a.MCPServers {
		path := fmt.Sprintf("mcpServers[%d]", i)
		if !mcpNameRE().MatchString(m.Name) || seen[m.Name] {
			return bad(path+".name", fmt.Sprintf("%q: want a unique name of lowercase letters, digits, - and _ (no __)", m.Name))
		}
		seen[m.Name] = true
		if (len(m.Command) > 0) == (m.URL != "") {
			return bad(path, "give either url (streamable HTTP) or command (stdio, run in the sandbox)")
		}
		if len(m.Command) > 0 {
			continue
		}
		if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad(path+".url", fmt.Sprintf("%q: want an http(s) URL of a streamable HTTP MCP endpoint", m.URL))
		}
	}
	if _, err := a.PolicyValue(); err != nil {
		return bad("policy", strings.TrimPrefix(err.Error(), "policy: "))
	}
	for _, n := range []struct {
		path     string
		v, limit int64
	}{{"session.maxActions", int64(a.Session.MaxActions), 100000}, {"session.maxMinutes", int64(a.Session.MaxMinutes), 100000},
		{"session.maxTurns", int64(a.Session.MaxTurns), 100000}, {"session.maxTokens", a.Session.MaxTokens, 1 << 40}} {
		if n.v < 0 || n.v > n.limit {
			return bad(n.path, fmt.Sprintf("%d: want 1 to %d (leave it out for the server's default)", n.v, n.limit))
		}
	}
	if e := a.Session.MaxExtensions; e != nil && (*e < 0 || *e > 1000) {
		return bad("session.maxExtensions", fmt.Sprintf("%d: want 0 to 1000", *e))
	}
	if a.Session.MaxLifetime < 0 || (a.Session.MaxLifetime > 0 && a.Session.MaxLifetime < Duration(time.Minute)) {
		return bad("session.maxLifetime", "want at least 1m (leave it out for the server's default)")
	}
	if a.Session.Watchdog < Duration(10*time.Second) {
		return bad("session.watchdog", "want at least 10s")
	}
	if a.Delivery.Require != "" && a.Delivery.Require != RequireAccepted {
		return bad("delivery.require", fmt.Sprintf("%q: want accepted (or leave it out)", a.Delivery.Require))
	}
	for i, t := range a.Triggers {
		path := fmt.Sprintf("triggers[%d]", i)
		if identity.CheckName(identity.TriggerName, t.Name) != nil {
			return bad(path+".name", fmt.Sprintf("%q: want %s", t.Name, identity.LabelRule))
		}
		for _, u := range a.Triggers[:i] {
			if u.Name == t.Name {
				return bad(path+".name", fmt.Sprintf("%q appears twice", t.Name))
			}
		}
		if t.Routing != "" && t.Routing != RouteSpawn && t.Routing != RouteSession && t.Routing != RouteBound {
			return bad(path+".routing", fmt.Sprintf("%q: want spawn, session or bound", t.Routing))
		}
		if t.Routing == RouteSession && a.Concurrency != 1 {
			return bad(path+".routing", "session routing needs a singleton agent (concurrency: 1): which live session would it reach?")
		}
		switch {
		case t.Release && (t.Message != "" || t.Schedule != "" || t.Routing != "" || t.Ref != ""):
			return bad(path+".release", "a releasing trigger releases bindings and routes nothing: leave out message, schedule, routing and ref")
		case t.Release && t.Repo == "":
			return bad(path+".repo", "required with release: the remote repository whose pull requests' closing releases the bindings")
		case t.Routing == RouteBound && (t.Repo == "" || t.Schedule != "" || t.Ref != ""):
			return bad(path+".routing", "bound routing reaches the sessions bound to the pull request a delivery names on repo: give repo (a remote repository), and no schedule or ref (it spawns nothing)")
		case t.Release && len(t.Events) == 0:
			return bad(path+".events", "required with release: the forge's closing events (github.pull_request.closed), or any delivery (an opened one too) would release")
		case !t.Release && strings.TrimSpace(t.Message) == "":
			return bad(path+".message", "required: the instruction each delivery brings (a template over .event and .payload)")
		}
		if _, err := template.New("m").Parse(t.Message); err != nil {
			return bad(path+".message", "not a valid template: "+err.Error())
		}
		if _, err := template.New("r").Parse(t.Ref); err != nil {
			return bad(path+".ref", "not a valid template: "+err.Error())
		}
		if t.Schedule != "" {
			if _, err := cron.ParseStandard(t.Schedule); err != nil {
				return bad(path+".schedule", fmt.Sprintf("%q: want a cron schedule such as \"*/15 * * * *\": %v", t.Schedule, err))
			}
		}
	}
	if a.ContextWindow != 0 && (a.ContextWindow < 1000 || a.ContextWindow > 100_000_000) {
		return bad("contextWindow", fmt.Sprintf("%d: want a number of tokens from 1000 (leave it out for the model's own)", a.ContextWindow))
	}
	return a.Environment.validate()
}

// validate checks an environment; paths are relative to environment.
func (e EnvironmentSpec) validate() error {
	bad := func(path, reason string) error { return &FieldError{Path: "environment." + path, Reason: reason} }
	if len(e.Setup) > 64<<10 {
		return bad("setup", fmt.Sprintf("%d bytes; keep the script under 64 KiB (put a longer one in the repository and call it)", len(e.Setup)))
	}
	if e.Setup == "" && len(e.Network.Setup) > 0 {
		return bad("network.setup", "egress for setup, but no setup script")
	}
	if e.Reuse != "" && e.Reuse != ReuseTree && e.Reuse != ReuseManifests {
		return bad("reuse", fmt.Sprintf("%q: want tree (the default: a layer serves the same files only) or manifests (any commit with the same manifests and lock files)", e.Reuse))
	}
	if e.SetupTimeout < 0 || (e.Setup != "" && e.SetupTimeout < Duration(time.Second)) || e.SetupTimeout > Duration(6*time.Hour) {
		return bad("setupTimeout", "want 1s to 6h")
	}
	for _, l := range []struct {
		name    string
		entries []string
	}{{"network.setup", e.Network.Setup}, {"network.commands", e.Network.Commands}} {
		for i, entry := range l.entries {
			if _, err := egress.ParseAllowlist([]string{entry}); err != nil {
				return bad(fmt.Sprintf("%s[%d]", l.name, i), fmt.Sprintf("%q: want HOST:PORT, *.DOMAIN:PORT or an IP literal with a port (e.g. proxy.golang.org:443)", entry))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Env)) {
		if !envNameRE().MatchString(name) {
			return bad("env."+name, "want a variable name of letters, digits and _ not starting with a digit")
		}
		if why := sandbox.CodeCarrying(name, e.Env[name]); why != "" {
			return bad("env."+name, "refused: "+why)
		}
		if strings.ContainsRune(e.Env[name], 0) {
			return bad("env."+name, "a value cannot hold a NUL byte")
		}
	}
	seen := map[string]bool{}
	for i, name := range e.Credentials {
		where := fmt.Sprintf("credentials[%d]", i)
		switch {
		case !envNameRE().MatchString(name):
			return bad(where, fmt.Sprintf("%q: want a variable name of letters, digits and _ not starting with a digit", name))
		case sandbox.CodeCarrying(name, "") != "":
			return bad(where, name+" refused: "+sandbox.CodeCarrying(name, ""))
		case seen[name] || e.Env[name] != "":
			return bad(where, name+" is given twice (credentials and env are one namespace)")
		}
		seen[name] = true
	}
	if len(e.IgnoredFiles) > MaxIgnoredFiles {
		return bad("ignoredFiles", fmt.Sprintf("%d patterns: at most %d", len(e.IgnoredFiles), MaxIgnoredFiles))
	}
	for i, p := range e.IgnoredFiles {
		c := path.Clean(p)
		if p == "" || path.IsAbs(p) || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(p, ":") ||
			strings.ContainsAny(p, "\x00\n") || len(p) > 256 {
			return bad(fmt.Sprintf("ignoredFiles[%d]", i), fmt.Sprintf("%q: want a pattern of paths inside the repository, such as .env.local or config/*.local.yml", p))
		}
	}
	for i, p := range e.ReadOnlyPaths {
		c := path.Clean(p)
		switch {
		case !path.IsAbs(p) || c == "/":
			return bad(fmt.Sprintf("readOnlyPaths[%d]", i), fmt.Sprintf("%q: want an absolute host path other than /", p))
		case c == "/proc" || c == "/sys" || c == "/dev" || c == "/run" || c == "/var/run" ||
			strings.HasPrefix(c, "/proc/") || strings.HasPrefix(c, "/sys/") || strings.HasPrefix(c, "/dev/") ||
			strings.HasPrefix(c, "/run/") || strings.HasPrefix(c, "/var/run/"):
			return bad(fmt.Sprintf("readOnlyPaths[%d]", i), fmt.Sprintf("%q: kernel and runtime state (/proc, /sys, /dev, /run) is never shown to commands", p))
		}
	}
	return nil
}

// MaxIgnoredFiles bounds an environment's ignoredFiles patterns.
const MaxIgnoredFiles = 50

var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

func checkModel(m string, known Known) error {
	provider, model, ok := strings.Cut(m, "/")
	if !ok || provider == "" || model == "" {
		return fmt.Errorf("%q: want PROVIDER/MODEL, e.g. anthropic/claude-sonnet-4-5 or replay/script.yaml", m)
	}
	if known.Provider != nil && !known.Provider(provider) {
		return fmt.Errorf("unknown provider %q", provider)
	}
	return nil
}

// Digest is the content digest of the canonical JSON form of the spec.
func (a *Agent) Digest() string {
	b, _ := json.Marshal(a)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// JSON is the canonical JSON form stored and snapshotted onto sessions.
func (a *Agent) JSON() json.RawMessage {
	b, _ := json.Marshal(a)
	return b
}

// Title renders the display title for a session from its kickoff input.
func (a *Agent) Title(input string) string {
	text := strings.Join(strings.Fields(input), " ")
	switch a.DisplayTitle {
	case "", "infer":
		if text == "" {
			return a.Name
		}
		return text
	}
	return strings.ReplaceAll(a.DisplayTitle, "{{input}}", text)
}
