// Package anthropic is the model provider for the Anthropic Messages API,
// on the official Go SDK, streaming. ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL configure it; the SDK retries 429s and 5xx answers
// with backoff, honoring Retry-After.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
)

// MaxTokens bounds one response's answer (its thinking has a budget of
// its own on top, within maxOutput, the most every model answers).
const (
	MaxTokens = 8192
	maxOutput = 32000
)

// ThinkingBudget is the extended thinking's budget of tokens for each
// reasoning effort (provider.Efforts).
var ThinkingBudget = map[string]int64{provider.EffortLow: 2048, provider.EffortMedium: 8192, provider.EffortHigh: 24576}

// Factory returns the provider factory, reading its settings through
// getenv. A missing key is an error when a session starts, not mid-turn.
func Factory(getenv func(string) string) provider.Factory {
	return func(model string) (provider.Provider, error) {
		key := getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, errors.New("ANTHROPIC_API_KEY is not set: export it, or choose another model")
		}
		opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(4)}
		if base := getenv("ANTHROPIC_BASE_URL"); base != "" {
			opts = append(opts, option.WithBaseURL(base))
		}
		return &Provider{client: sdk.NewClient(opts...), model: model}, nil
	}
}

// Provider calls one Anthropic model.
type Provider struct {
	client sdk.Client
	model  string
}

var _ provider.Provider = (*Provider)(nil)

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	budget, ok := ThinkingBudget[req.ReasoningEffort]
	if req.ReasoningEffort != "" && !ok {
		return provider.Response{}, fmt.Errorf("anthropic: reasoning effort %q: want low, medium or high", req.ReasoningEffort)
	}
	// Within a tool loop the model's message must open with its thinking
	// when thinking is on: one that had none (thinking off, or its
	// blocks dropped) keeps it off until the loop ends.
	thinking := ok && !midLoopWithout(req.Messages, p.model)
	params := sdk.MessageNewParams{Model: sdk.Model(p.model), MaxTokens: MaxTokens, Messages: messages(req.Messages, p.model, thinking), Tools: tools(req.Tools)}
	if thinking {
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		params.MaxTokens = min(MaxTokens+budget, maxOutput) // Opus 4 answers at most 32,000
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg sdk.Message
	ids := map[int64]string{}
	// Arguments are kept exactly as streamed: the SDK's accumulator would
	// silently replace malformed JSON, and a guessed argument is never run.
	args := map[int64]*strings.Builder{}
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return provider.Response{}, fmt.Errorf("anthropic stream: %w", err)
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				ids[ev.Index] = ev.ContentBlock.ID
				sink(provider.Delta{Kind: provider.DeltaToolStart, ToolCallID: ev.ContentBlock.ID, ToolName: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "thinking_delta", "signature_delta":
				sink(provider.Delta{Kind: provider.DeltaThinking})
			case "text_delta":
				sink(provider.Delta{Kind: provider.DeltaText, Text: ev.Delta.Text})
			case "input_json_delta":
				if args[ev.Index] == nil {
					args[ev.Index] = &strings.Builder{}
				}
				args[ev.Index].WriteString(ev.Delta.PartialJSON)
				sink(provider.Delta{Kind: provider.DeltaToolArgs, ToolCallID: ids[ev.Index], Text: ev.Delta.PartialJSON})
			}
		}
	}
	if err := stream.Err(); err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			return provider.Response{}, &provider.StatusError{Status: apiErr.StatusCode, Message: apiErr.Message + " " + apiErr.RawJSON(), Err: fmt.Errorf("anthropic: %w", err)}
		}
		return provider.Response{}, fmt.Errorf("anthropic: %w", err)
	}
	if msg.StopReason == "" {
		return provider.Response{}, errors.New("anthropic: the stream ended before the message did")
	}
	resp := provider.Response{StopReason: string(msg.StopReason),
		Usage: provider.Usage{InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens)}}
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			resp.Text += b.Text
		case "thinking":
			resp.Thinking = append(resp.Thinking, provider.Thinking{Text: b.Thinking, Signature: b.Signature, Model: p.model})
		case "redacted_thinking":
			resp.Thinking = append(resp.Thinking, provider.Thinking{Redacted: b.Data, Model: p.model})
		case "tool_use":
			raw := json.RawMessage(`{}`) // a call without arguments streams none
			if a := args[int64(i)]; a != nil {
				raw = json.RawMessage(a.String())
			}
			resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: b.ID, Name: b.Name, Args: raw})
		}
	}
	return resp, nil
}

// kept are the thinking blocks of a message that model can be given
// back: its own, unchanged (a block the store redacted no longer matches
// its signature).
func kept(m provider.Message, model string) []provider.Thinking {
	var out []provider.Thinking
	for _, t := range m.Thinking {
		if t.Model == model && !strings.Contains(t.Text, secret.Marker) {
			out = append(out, t)
		}
	}
	return out
}

// midLoopWithout says the conversation ends in a tool loop whose last
// model message has no thinking model can be given back.
func midLoopWithout(in []provider.Message, model string) bool {
	if len(in) == 0 || in[len(in)-1].Role != provider.RoleTool {
		return false
	}
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Role == provider.RoleAssistant {
			return len(kept(in[i], model)) == 0
		}
	}
	return false
}

// messages converts the conversation; consecutive user-side content (tool
// results, then text) goes in one user message, as the API wants. With
// thinking on, a model message opens with its thinking given back.
func messages(in []provider.Message, model string, thinking bool) []sdk.MessageParam {
	var out []sdk.MessageParam
	var user []sdk.ContentBlockParamUnion
	flush := func() {
		if len(user) > 0 {
			out = append(out, sdk.NewUserMessage(user...))
			user = nil
		}
	}
	for _, m := range in {
		switch m.Role {
		case provider.RoleUser:
			user = append(user, sdk.NewTextBlock(m.Text))
			for _, a := range m.Attachments {
				if a.Text != "" {
					user = append(user, sdk.NewTextBlock(a.Text))
				}
				switch {
				case a.Data == nil:
				case a.Kind == session.AttachmentImage:
					user = append(user, sdk.NewImageBlockBase64(a.Type, base64.StdEncoding.EncodeToString(a.Data)))
				case a.Kind == session.AttachmentPDF:
					user = append(user, sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(a.Data)}))
				}
			}
		case provider.RoleTool:
			user = append(user, sdk.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError))
		case provider.RoleAssistant:
			flush()
			var blocks []sdk.ContentBlockParamUnion
			for _, t := range kept(m, model) {
				if !thinking {
					break
				}
				// Given back first, unchanged: the API checks them.
				if t.Redacted != "" {
					blocks = append(blocks, sdk.NewRedactedThinkingBlock(t.Redacted))
				} else {
					blocks = append(blocks, sdk.NewThinkingBlock(t.Signature, t.Text))
				}
			}
			if m.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				var input any = json.RawMessage(c.Args)
				if !json.Valid(c.Args) {
					input = map[string]any{} // malformed arguments were refused; the result says so
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, sdk.NewTextBlock("(no reply)"))
			}
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
	}
	flush()
	return out
}

func tools(in []provider.ToolSpec) []sdk.ToolUnionParam {
	var out []sdk.ToolUnionParam
	for _, t := range in {
		var schema struct {
			Properties any            `json:"properties"`
			Required   []string       `json:"required"`
			Extra      map[string]any `json:"-"`
		}
		_ = json.Unmarshal(t.Schema, &schema)
		var all map[string]any
		_ = json.Unmarshal(t.Schema, &all)
		extra := map[string]any{}
		for k, v := range all {
			if k != "properties" && k != "required" && k != "type" {
				extra[k] = v
			}
		}
		out = append(out, sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: t.Name, Description: sdk.String(t.Description),
			InputSchema: sdk.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required, ExtraFields: extra}}})
	}
	return out
}
