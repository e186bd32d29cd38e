// Package replay is a model provider that plays a scripted conversation from
// a YAML file: assistant text, tool calls and structured questions. It is
// deterministic, so demos and tests get the same session every time, and a
// retried model call yields exactly the same output.
package replay

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paddock-dev/paddock/internal/provider"
)

// Script is a scripted conversation: the nth model call of a session plays
// Steps[n]. A step without tool calls ends its turn.
type Script struct {
	Steps []Step `yaml:"steps"`
}

// Step is one assistant message.
type Step struct {
	Text      string     `yaml:"text"`
	ToolCalls []ToolCall `yaml:"toolCalls"`
	// Delay holds the step back before it streams, e.g. "2s"; a canceled
	// context (an interrupt) ends the wait.
	Delay string `yaml:"delay"`
}

// ToolCall is a scripted tool call. Args is given as YAML and sent as JSON;
// RawArgs, when set, is sent verbatim (to script malformed arguments).
type ToolCall struct {
	Name    string         `yaml:"name"`
	Args    map[string]any `yaml:"args"`
	RawArgs string         `yaml:"rawArgs"`
}

//go:embed scripts/*.yaml
var builtin embed.FS

// Load reads a built-in script by name ("demo" is scripts/demo.yaml).
func Load(name string) (*Script, error) { return load("", name) }

// Dir is the provider.Factory for "replay/NAME" that plays the built-in
// scripts and the scripts under dir (the data directory's replay folder).
// A name is a relative path of plain segments: nothing outside dir is ever
// read, and no error repeats a file's content.
func Dir(dir string) provider.Factory {
	return func(model string) (provider.Provider, error) {
		s, err := load(dir, model)
		if err != nil {
			return nil, err
		}
		return &Provider{script: s}, nil
	}
}

var segment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// MaxScript bounds a script file.
const MaxScript = 4 << 20

func load(dir, name string) (*Script, error) {
	file := strings.TrimSuffix(name, ".yaml") + ".yaml"
	for _, seg := range strings.Split(file, "/") {
		if !segment.MatchString(seg) || len(name) > 200 {
			return nil, fmt.Errorf("replay script %q: want a name like demo or team/fix.yaml (letters, digits, '.', '-', '_' and '/' between parts)", trunc(name))
		}
	}
	if data, err := builtin.ReadFile("scripts/" + file); err == nil {
		return parseNamed(name, data)
	}
	where := "no built-in script of that name"
	if dir != "" {
		where += ", and no file " + file + " in " + dir
		root, err := os.OpenRoot(dir)
		if err == nil {
			defer root.Close()
			data, err := readCapped(root, file)
			if err == nil {
				return parseNamed(name, data)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("replay script %q: cannot read %s in %s", name, file, dir)
			}
		}
	}
	return nil, fmt.Errorf("replay script %q: no such file: %s", name, where)
}

func readCapped(root *os.Root, file string) ([]byte, error) {
	f, err := root.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxScript+1))
	if err == nil && len(data) > MaxScript {
		err = fmt.Errorf("larger than %d bytes", MaxScript)
	}
	return data, err
}

var lineNo = regexp.MustCompile(`line \d+`)

// parseNamed parses a script; its errors name the line, never the content.
func parseNamed(name string, data []byte) (*Script, error) {
	s, err := Parse(data)
	if err != nil {
		where := ""
		if m := lineNo.FindString(err.Error()); m != "" {
			where = " at " + m
		}
		return nil, fmt.Errorf("replay script %q is not a valid script%s", name, where)
	}
	return s, nil
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// Parse parses a script strictly.
func Parse(data []byte) (*Script, error) {
	var s Script
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("replay script: %w", err)
	}
	for i, st := range s.Steps {
		if st.Delay != "" {
			if _, err := time.ParseDuration(st.Delay); err != nil {
				return nil, fmt.Errorf("replay script: steps[%d].delay: %w", i, err)
			}
		}
		for j, c := range st.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("replay script: steps[%d].toolCalls[%d].name: required", i, j)
			}
		}
	}
	return &s, nil
}

// Factory is the provider.Factory for "replay/NAME" with the built-in
// scripts only.
var Factory = Dir("")

// Provider plays a script.
type Provider struct{ script *Script }

var _ provider.Provider = (*Provider)(nil)

// summarized finds the count of the model's messages a compaction
// summarized (see session.Compaction).
var summarized = regexp.MustCompile(`\(\d+ messages, (\d+) of them yours\)`)

// Stream implements provider.Provider: the step played is the number of
// assistant messages already in the conversation.
func (p *Provider) Stream(ctx context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	// A compacted conversation says how many of the model's messages its
	// summary replaced: they count as played.
	n := 0
	for _, m := range req.Messages {
		if m.Role == provider.RoleAssistant {
			n++
		}
	}
	if len(req.Messages) > 0 {
		if m := summarized.FindStringSubmatch(req.Messages[0].Text); m != nil {
			k, _ := strconv.Atoi(m[1])
			n += k
		}
	}
	if n >= len(p.script.Steps) {
		text := "(the replay script has no more steps)"
		sink(provider.Delta{Kind: provider.DeltaText, Text: text})
		return provider.Response{Text: text, StopReason: "end_turn"}, nil
	}
	st := p.script.Steps[n]
	if st.Delay != "" {
		d, _ := time.ParseDuration(st.Delay)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return provider.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	resp := provider.Response{Text: st.Text, StopReason: "end_turn"}
	// Stream the text a few words at a time, as a real model would.
	words := strings.SplitAfter(st.Text, " ")
	for i := 0; i < len(words); i += 3 {
		sink(provider.Delta{Kind: provider.DeltaText, Text: strings.Join(words[i:min(i+3, len(words))], "")})
	}
	for j, c := range st.ToolCalls {
		id := fmt.Sprintf("call_%d_%d", n, j)
		args := []byte(c.RawArgs)
		if c.RawArgs == "" {
			if c.Args == nil {
				c.Args = map[string]any{}
			}
			var err error
			if args, err = json.Marshal(c.Args); err != nil {
				return provider.Response{}, fmt.Errorf("replay script: steps[%d].toolCalls[%d].args: %w", n, j, err)
			}
		}
		sink(provider.Delta{Kind: provider.DeltaToolStart, ToolCallID: id, ToolName: c.Name})
		for k := 0; k < len(args); k += 8 {
			sink(provider.Delta{Kind: provider.DeltaToolArgs, ToolCallID: id, Text: string(args[k:min(k+8, len(args))])})
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: id, Name: c.Name, Args: args})
		resp.StopReason = "tool_use"
	}
	resp.Usage = provider.Usage{InputTokens: len(req.Messages) * 10, OutputTokens: len(words)}
	return resp, nil
}
