// Package provider holds the provider-neutral types of a model call and the
// registry that resolves "PROVIDER/MODEL" names. Each provider lives in its
// own subpackage (replay today; anthropic and openai plug in the same way).
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/session"
)

// Role says who speaks a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one call the model asks for. Args is the complete argument
// text exactly as the model produced it, which may be malformed JSON; it is
// parsed later, strictly, and a parse error goes back to the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Dropped counts argument bytes left out because they exceeded MaxArgs
	// (the call is then refused, and Args is empty).
	Dropped int `json:"dropped,omitempty"`
}

// wireCall is ToolCall as encoded: the arguments as a JSON string (text,
// verbatim), or base64 when they are not valid UTF-8, so malformed
// arguments survive every encoding on their way (activity results,
// transcript events) byte for byte.
type wireCall struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args,omitempty"`
	ArgsBase64 []byte          `json:"argsBase64,omitempty"`
	Dropped    int             `json:"dropped,omitempty"`
}

// MarshalJSON implements json.Marshaler: it never fails on bad arguments.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	w := wireCall{ID: c.ID, Name: c.Name, Dropped: c.Dropped}
	if utf8.Valid(c.Args) {
		w.Args, _ = json.Marshal(string(c.Args))
	} else {
		w.ArgsBase64 = c.Args
	}
	return json.Marshal(w)
}

// UnmarshalJSON implements json.Unmarshaler. Arguments encoded as a JSON
// value other than a string (records from before they were carried as
// text) are taken as that value's JSON.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var w wireCall
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	c.ID, c.Name, c.Args, c.Dropped = w.ID, w.Name, nil, w.Dropped
	switch {
	case w.ArgsBase64 != nil:
		c.Args = w.ArgsBase64
	case len(w.Args) > 0 && w.Args[0] == '"':
		var text string
		if err := json.Unmarshal(w.Args, &text); err != nil {
			return err
		}
		c.Args = json.RawMessage(text)
	case len(w.Args) > 0:
		c.Args = w.Args
	}
	return nil
}

// MaxArgs is the most argument text a call may carry; a call with more is
// refused with an error the model sees.
const MaxArgs = 256 << 10

// Message is one message of the conversation.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// Thinking is an assistant message's reasoning, given back as it came.
	Thinking   []Thinking `json:"thinking,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"` // for RoleTool
	IsError    bool       `json:"isError,omitempty"`    // for RoleTool
	// Attachments are a user message's files, after its text.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is a file given with a user message: an image or a PDF
// is given as such to a model that takes it (Input), text inline; the
// rest is Text, a note saying where it is in the working copy.
type Attachment struct {
	session.AttachmentRef
	// Data is an image's or a PDF's content (never serialized).
	Data []byte `json:"-"`
	// Text is what the model reads instead of Data (a text file inline,
	// or the note of a file not given as content).
	Text string `json:"-"`
}

// Input says why a model does not take a kind of attachment as content
// (nil: it does). Text is taken by every model; images by the vision
// models of Anthropic (Claude 3 and later but 3.5 Haiku) and OpenAI
// (GPT-4o, GPT-4.1, GPT-5, o1, o3, o4-mini); PDF documents by Claude 3.5
// Sonnet and later and by the same OpenAI models; a scripted model takes
// them all.
func Input(name string, kind session.AttachmentKind) error {
	p, model, _ := strings.Cut(name, "/")
	if kind == session.AttachmentText || kind == session.AttachmentFile || p == "replay" {
		return nil
	}
	claude4 := strings.HasPrefix(model, "claude-sonnet-4") || strings.HasPrefix(model, "claude-opus-4") || strings.HasPrefix(model, "claude-haiku-4")
	oa := strings.HasPrefix(model, "gpt-4o") || strings.HasPrefix(model, "chatgpt-4o") || strings.HasPrefix(model, "gpt-4.1") || strings.HasPrefix(model, "gpt-5") ||
		strings.HasPrefix(model, "o3") || strings.HasPrefix(model, "o4-mini") || model == "o1" || strings.HasPrefix(model, "o1-2")
	var takes bool
	switch {
	case p == "anthropic" && kind == session.AttachmentImage:
		takes = claude4 || strings.HasPrefix(model, "claude-3") && !strings.HasPrefix(model, "claude-3-5-haiku")
	case p == "anthropic" && kind == session.AttachmentPDF:
		takes = claude4 || strings.HasPrefix(model, "claude-3-5-sonnet") || strings.HasPrefix(model, "claude-3-7")
	case p == "openai":
		takes = oa
	}
	if takes {
		return nil
	}
	what := map[session.AttachmentKind]string{session.AttachmentImage: "images", session.AttachmentPDF: "PDF documents"}[kind]
	return fmt.Errorf("model %s does not take %s: send it to a model that does (payload.model), or as text", name, what)
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one model call.
type Request struct {
	Model    string     `json:"model"`
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// ReasoningEffort is how much the model reasons before it answers,
	// one of Efforts(model) ("": the model's default).
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
}

// Usage counts tokens of one call. OutputTokens include the reasoning
// tokens; ThinkingTokens are those of them the provider reports apart.
type Usage struct {
	InputTokens    int `json:"inputTokens"`
	OutputTokens   int `json:"outputTokens"`
	ThinkingTokens int `json:"thinkingTokens,omitempty"`
}

// Thinking is a model's reasoning as its provider returned it (Text and
// its Signature; or, encrypted by the provider, Redacted): given back
// unchanged with the message it came with, as the provider requires.
type Thinking struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
	// Model made it: its signature holds for that model alone.
	Model string `json:"model,omitempty"`
}

// Response is the complete assistant message of one call.
type Response struct {
	Text       string     `json:"text,omitempty"`
	Thinking   []Thinking `json:"thinking,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	StopReason string     `json:"stopReason,omitempty"`
	Usage      Usage      `json:"usage"`
}

// Reasoning efforts, from the least to the most.
const (
	EffortMinimal = "minimal"
	EffortLow     = "low"
	EffortMedium  = "medium"
	EffortHigh    = "high"
)

// Efforts are the reasoning efforts a model takes, as its vendor
// documents them (nil: it has no such setting): Anthropic's models with
// extended thinking (a budget of thinking tokens per level), OpenAI's
// reasoning models (reasoning_effort; GPT-5 also minimal). A scripted
// model takes them all.
func Efforts(name string) []string {
	p, model, _ := strings.Cut(name, "/")
	three := []string{EffortLow, EffortMedium, EffortHigh}
	switch {
	case p == "replay":
		return append([]string{EffortMinimal}, three...)
	case p == "anthropic" && (strings.HasPrefix(model, "claude-3-7") || strings.HasPrefix(model, "claude-sonnet-4") ||
		strings.HasPrefix(model, "claude-opus-4") || strings.HasPrefix(model, "claude-haiku-4")):
		return three
	case p != "openai", strings.HasPrefix(model, "o1-mini"), strings.HasPrefix(model, "o1-preview"), strings.Contains(model, "-chat"):
		return nil
	case strings.HasPrefix(model, "gpt-5"):
		return append([]string{EffortMinimal}, three...)
	case strings.HasPrefix(model, "o1"), strings.HasPrefix(model, "o3"), strings.HasPrefix(model, "o4"):
		return three
	}
	return nil
}

// Taken is effort if the model takes it, else none.
func Taken(name, effort string) string {
	if CheckEffort(name, effort) != nil {
		return ""
	}
	return effort
}

// CheckEffort says why a model does not take a reasoning effort ("" is
// always taken).
func CheckEffort(name, effort string) error {
	if effort == "" || slices.Contains(Efforts(name), effort) {
		return nil
	}
	if levels := Efforts(name); len(levels) > 0 {
		return fmt.Errorf("reasoning effort %q: model %s takes %s", effort, name, strings.Join(levels, ", "))
	}
	return fmt.Errorf("reasoning effort %q: model %s has no reasoning setting; leave reasoningEffort out, or choose a reasoning model", effort, name)
}

// DeltaKind types a streamed fragment.
type DeltaKind int

// Delta kinds.
const (
	DeltaText      DeltaKind = iota // Text is a piece of assistant text
	DeltaToolStart                  // a tool call ToolCallID/ToolName begins (state generating)
	DeltaToolArgs                   // Text is a fragment of the call's argument JSON
	DeltaThinking                   // the model is reasoning (nothing to show: progress only)
)

// Delta is one streamed fragment.
type Delta struct {
	Kind       DeltaKind
	Text       string
	ToolCallID string
	ToolName   string
}

// Provider streams one model call. Stream calls sink for each fragment, in
// order, and returns the complete response.
type Provider interface {
	Stream(ctx context.Context, req Request, sink func(Delta)) (Response, error)
}

// Factory makes a provider for a model name (the part after "PROVIDER/").
type Factory func(model string) (Provider, error)

// Registry resolves "PROVIDER/MODEL" names.
type Registry struct {
	factories map[string]Factory
}

// ErrUnknownModel says a model name cannot be resolved.
var ErrUnknownModel = errors.New("unknown model")

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a provider under name.
func (r *Registry) Register(name string, f Factory) { r.factories[name] = f }

// Has reports whether a provider is registered under name.
func (r *Registry) Has(name string) bool { _, ok := r.factories[name]; return ok }

// Resolve returns the provider for "PROVIDER/MODEL" and the model part.
func (r *Registry) Resolve(name string) (Provider, string, error) {
	p, model, ok := strings.Cut(name, "/")
	if !ok || model == "" {
		return nil, "", fmt.Errorf("%w %q: want PROVIDER/MODEL", ErrUnknownModel, name)
	}
	f, ok := r.factories[p]
	if !ok {
		names := make([]string, 0, len(r.factories))
		for n := range r.factories {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, "", fmt.Errorf("%w %q: no provider %q (have %s)", ErrUnknownModel, name, p, strings.Join(names, ", "))
	}
	prov, err := f(model)
	if err != nil {
		return nil, "", fmt.Errorf("model %q: %w", name, err)
	}
	return prov, model, nil
}

// ContextWindow is the context window of a model, in tokens, as its
// vendor documents it; 128,000 for a model not known here (agents may
// declare contextWindow).
func ContextWindow(name string) int {
	_, model, _ := strings.Cut(name, "/")
	switch {
	case strings.HasPrefix(model, "claude-"):
		return 200_000
	case strings.HasPrefix(model, "gpt-4.1"):
		return 1_047_576
	case strings.HasPrefix(model, "gpt-5"):
		return 400_000
	case strings.HasPrefix(model, "o3"), strings.HasPrefix(model, "o4"):
		return 200_000
	}
	return 128_000
}

// ArgsProblem says what is wrong with a call's argument text, for the
// model to correct: too large, not UTF-8, not JSON (with the parser's
// error), or JSON that is not an object.
func (call ToolCall) ArgsProblem() string {
	switch {
	case call.Dropped > 0:
		return fmt.Sprintf("%d bytes, at most %d; split the work into smaller calls", call.Dropped, MaxArgs)
	case !utf8.Valid(call.Args):
		return "not valid UTF-8; send one complete JSON object"
	}
	var v any
	if err := json.Unmarshal(call.Args, &v); err != nil {
		return fmt.Sprintf("not valid JSON (%v); send one complete JSON object", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf("want a JSON object, got %s", jsonKind(v))
	}
	return ""
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}
