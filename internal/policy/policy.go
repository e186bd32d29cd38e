// Package policy is a project's rules for tool calls: per tool disabled,
// allowedWithPermission or allowedWithoutPermission (exclude, ask, allow
// for short), the free shell commands, and how rejections and approvals
// behave. A policy is validated on load, identified by its content digest,
// and pinned on each session at creation. Evaluation is pure.
package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paddock-dev/paddock/internal/shellcheck"
)

// Value is what a policy says of a tool.
type Value string

// Values, with their short forms exclude, ask and allow.
const (
	Disabled                 Value = "disabled"
	AllowedWithPermission    Value = "allowedWithPermission"
	AllowedWithoutPermission Value = "allowedWithoutPermission"
)

// ParseValue reads a value or its short form; anything else is an error,
// never a silent default.
func ParseValue(s string) (Value, error) {
	switch s {
	case "disabled", "exclude":
		return Disabled, nil
	case "allowedWithPermission", "ask":
		return AllowedWithPermission, nil
	case "allowedWithoutPermission", "allow":
		return AllowedWithoutPermission, nil
	}
	return "", fmt.Errorf("%q is not a policy value (want disabled/exclude, allowedWithPermission/ask or allowedWithoutPermission/allow)", s)
}

// strictness orders values: disabled is the strictest.
func (v Value) strictness() int {
	switch v {
	case Disabled:
		return 2
	case AllowedWithPermission:
		return 1
	}
	return 0
}

// Short is the short form: exclude, ask or allow.
func (v Value) Short() string {
	switch v {
	case Disabled:
		return "exclude"
	case AllowedWithPermission:
		return "ask"
	}
	return "allow"
}

// Policy is a set of rules for tool calls.
type Policy struct {
	Default Value            `json:"default"`
	Tools   map[string]Value `json:"tools,omitempty"`
	// Commands are free shell commands: argv prefixes such as "git status".
	Commands []string `json:"commands,omitempty"`
	// ContinueAfterToolRejection reports a rejected call to the model and
	// continues the loop; off, a rejection stops the turn.
	ContinueAfterToolRejection bool `json:"continueAfterToolRejection,omitempty"`
	// ApprovalTTL bounds how long an approval request waits.
	ApprovalTTL time.Duration `json:"approvalTtl"`
	// Floor is a policy this one is never looser than (a delegated
	// session's is its delegating session's, Within): each decision is
	// the stricter of this policy's and its floor's. Fewer free commands
	// may make the analyzer read less of a command it then does not know
	// (a refusal inside an awk program becomes a question); the floor
	// keeps the refusal.
	Floor *Policy `json:"floor,omitempty"`
}

// wirePolicy is Policy without its JSON methods (the TTL in nanoseconds).
type wirePolicy Policy

// MarshalJSON writes approvalTtl in human form ("24h0m0s").
func (p Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		wirePolicy
		ApprovalTTL string `json:"approvalTtl"`
	}{wirePolicy(p), p.ApprovalTTL.String()})
}

// UnmarshalJSON reads approvalTtl in human form, or in nanoseconds as
// policies pinned before it was written so.
func (p *Policy) UnmarshalJSON(data []byte) error {
	var w struct {
		wirePolicy
		ApprovalTTL json.RawMessage `json:"approvalTtl"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = Policy(w.wirePolicy)
	p.ApprovalTTL = 0
	if len(w.ApprovalTTL) == 0 || string(w.ApprovalTTL) == "null" {
		return nil
	}
	var text string
	if json.Unmarshal(w.ApprovalTTL, &text) == nil {
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("approvalTtl %q: %w", text, err)
		}
		p.ApprovalTTL = d
		return nil
	}
	var ns int64
	if err := json.Unmarshal(w.ApprovalTTL, &ns); err != nil {
		return fmt.Errorf("approvalTtl: want a duration such as \"24h\": %w", err)
	}
	p.ApprovalTTL = time.Duration(ns)
	return nil
}

// DefaultApprovalTTL is how long an approval waits unless the policy says.
const DefaultApprovalTTL = 24 * time.Hour

// DefaultCommands are free when no policy names any: commands that only
// read (shellcheck.DefaultFree, each with the options that keep it so).
var DefaultCommands = shellcheck.DefaultFree

// DefaultTools are allowed without permission when no policy says
// otherwise: they read the working copy or the project's sessions (as
// the session's requester may), talk to the user, or delegate (a
// delegated session never has more than its delegating one: its own
// calls pass the same gate). Starting or steering another session
// (sessions_spawn, sessions_send) asks.
var DefaultTools = map[string]Value{"read_file": AllowedWithoutPermission, "list_dir": AllowedWithoutPermission,
	"search": AllowedWithoutPermission, "ask_user": AllowedWithoutPermission, "archive_session": AllowedWithoutPermission,
	"sessions_summary": AllowedWithoutPermission, "sessions_conversation": AllowedWithoutPermission,
	"sessions_search": AllowedWithoutPermission, "sessions_tools": AllowedWithoutPermission,
	"sessions_triggers": AllowedWithoutPermission, "sessions_bindings": AllowedWithoutPermission,
	"sessions_commands": AllowedWithoutPermission, "delegate": AllowedWithoutPermission}

// Default is the policy of a project that has none: every tool that
// changes something asks, tools that only read or talk to the user are
// allowed, and the read-only commands are free.
func Default() *Policy {
	tools := map[string]Value{}
	for n, v := range DefaultTools {
		tools[n] = v
	}
	return &Policy{Default: AllowedWithPermission, Tools: tools, Commands: append([]string(nil), DefaultCommands...), ApprovalTTL: DefaultApprovalTTL}
}

// file is the YAML form.
type file struct {
	Default  string            `yaml:"default"`
	Tools    map[string]string `yaml:"tools,omitempty"`
	Commands *struct {
		Allow []string `yaml:"allow"`
	} `yaml:"commands"`
	ContinueAfterToolRejection bool   `yaml:"continueAfterToolRejection"`
	ApprovalTTL                string `yaml:"approvalTtl"`
}

// Empty reports whether a policy document sets nothing: no document, a
// null one, or an empty mapping (Parse reads each as the default policy,
// which a caller sending one almost certainly did not mean).
func Empty(data []byte) bool {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return false // Parse reports it
	}
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// Parse reads a policy written in YAML, strictly: unknown fields, unknown
// values and bad durations are errors naming the field.
func Parse(data []byte) (*Policy, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("policy: %w", err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("policy: more than one YAML document: a policy is one document")
	}
	if err := CheckUTF8("policy", f); err != nil {
		return nil, err
	}
	p := &Policy{Default: AllowedWithPermission, Tools: map[string]Value{}, ApprovalTTL: DefaultApprovalTTL}
	if f.Default != "" {
		v, err := ParseValue(f.Default)
		if err != nil {
			return nil, fmt.Errorf("policy: default: %w", err)
		}
		p.Default = v
	}
	for name, s := range f.Tools {
		v, err := ParseValue(s)
		if err != nil {
			return nil, fmt.Errorf("policy: tools.%s: %w", name, err)
		}
		p.Tools[name] = v
	}
	if f.Commands != nil {
		for i, c := range f.Commands.Allow {
			if strings.TrimSpace(c) == "" {
				return nil, fmt.Errorf("policy: commands.allow[%d]: empty command", i)
			}
			p.Commands = append(p.Commands, strings.Join(strings.Fields(c), " "))
		}
	} else {
		p.Commands = append([]string(nil), DefaultCommands...)
	}
	p.ContinueAfterToolRejection = f.ContinueAfterToolRejection
	if f.ApprovalTTL != "" {
		d, err := time.ParseDuration(f.ApprovalTTL)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("policy: approvalTtl: %q is not a positive duration (e.g. 30m, 24h)", f.ApprovalTTL)
		}
		p.ApprovalTTL = d
	}
	return p, nil
}

// YAML writes the policy in the form Parse reads: Parse(p.YAML()) is p.
func (p *Policy) YAML() []byte {
	f := file{Default: p.Default.Short(), ContinueAfterToolRejection: p.ContinueAfterToolRejection, ApprovalTTL: p.ApprovalTTL.String(),
		Commands: &struct {
			Allow []string `yaml:"allow"`
		}{Allow: append([]string{}, p.Commands...)}}
	if len(p.Tools) > 0 {
		f.Tools = map[string]string{}
		for name, v := range p.Tools {
			f.Tools[name] = v.Short()
		}
	}
	out, _ := yaml.Marshal(f)
	return out
}

// Digest identifies the policy by its content.
func (p *Policy) Digest() string {
	// The digest is over the wire form with the TTL in nanoseconds, as it
	// always was, so pinned digests stay comparable.
	b, _ := json.Marshal((*wirePolicy)(p.canonical()))
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (p *Policy) canonical() *Policy {
	c := *p
	c.Commands = append([]string(nil), p.Commands...)
	sort.Strings(c.Commands)
	return &c
}

// Tool returns what the policy says of a tool.
func (p *Policy) Tool(name string) (Value, string) {
	if v, ok := p.Tools[name]; ok {
		return v, "tools." + name + "=" + v.Short()
	}
	return p.Default, "default=" + p.Default.Short()
}

// Stricter combines two policies into one at least as strict as each: per
// tool the stricter value, only commands free in both, rejection stopping
// the turn if either says so, the shorter approval TTL. A session's or an
// agent's policy is combined with its project's this way, so it can only
// tighten the project's.
func Stricter(a, b *Policy) *Policy {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := &Policy{Default: stricter(a.Default, b.Default), Tools: map[string]Value{},
		ContinueAfterToolRejection: a.ContinueAfterToolRejection && b.ContinueAfterToolRejection,
		ApprovalTTL:                min(a.ApprovalTTL, b.ApprovalTTL)}
	switch {
	case a.Floor != nil && b.Floor != nil:
		out.Floor = Stricter(a.Floor, b.Floor)
	case a.Floor != nil:
		out.Floor = a.Floor
	case b.Floor != nil:
		out.Floor = b.Floor
	}
	names := map[string]bool{}
	for n := range a.Tools {
		names[n] = true
	}
	for n := range b.Tools {
		names[n] = true
	}
	for n := range names {
		av, _ := a.Tool(n)
		bv, _ := b.Tool(n)
		out.Tools[n] = stricter(av, bv)
	}
	inB := map[string]bool{}
	for _, c := range b.Commands {
		inB[c] = true
	}
	for _, c := range a.Commands {
		if inB[c] {
			out.Commands = append(out.Commands, c)
		}
	}
	return out
}

// Within is the policy of a session delegated by one pinned to parent:
// parent tightened by asked, and never looser than parent on any call
// (its Floor), whatever asked says.
func Within(parent, asked *Policy) *Policy {
	out := Stricter(parent, asked)
	out.Floor = parent
	return out
}

func stricter(a, b Value) Value {
	if b.strictness() > a.strictness() {
		return b
	}
	return a
}

// Pinned is the policy a session was started with, as it recorded it
// (the default one for a session recorded before policies were pinned).
func Pinned(recorded []byte) (*Policy, error) {
	if len(recorded) == 0 {
		return Default(), nil
	}
	var p Policy
	if err := json.Unmarshal(recorded, &p); err != nil {
		return nil, fmt.Errorf("the session's pinned policy is unreadable: %w", err)
	}
	return &p, nil
}
