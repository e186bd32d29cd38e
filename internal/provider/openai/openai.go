// Package openai is the model provider for OpenAI-compatible Chat
// Completions (OpenAI, vLLM, Ollama, llama.cpp server, hosted endpoints),
// on the official Go SDK, streaming. OPENAI_API_KEY and OPENAI_BASE_URL
// configure it; the SDK retries 429s and 5xx answers with backoff, honoring
// Retry-After.
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

// Factory returns the provider factory, reading its settings through
// getenv. A local server (OPENAI_BASE_URL) may need no key.
func Factory(getenv func(string) string) provider.Factory {
	return func(model string) (provider.Provider, error) {
		key, base := getenv("OPENAI_API_KEY"), getenv("OPENAI_BASE_URL")
		if key == "" && base == "" {
			return nil, errors.New("OPENAI_API_KEY is not set: export it, or set OPENAI_BASE_URL to an OpenAI-compatible server")
		}
		if key == "" {
			key = "unused" // local servers ignore it; the SDK wants one
		}
		opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(4)}
		if base != "" {
			opts = append(opts, option.WithBaseURL(base))
		}
		return &Provider{client: sdk.NewClient(opts...), model: model}, nil
	}
}

// Provider calls one model of an OpenAI-compatible server.
type Provider struct {
	client sdk.Client
	model  string
}

var _ provider.Provider = (*Provider)(nil)

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, sink func(provider.Delta)) (provider.Response, error) {
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(p.model), Messages: messages(req), Tools: tools(req.Tools),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}, ReasoningEffort: shared.ReasoningEffort(req.ReasoningEffort)}
	stream := p.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	acc := sdk.ChatCompletionAccumulator{}
	started := map[int64]string{}
	finished := false
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" {
				sink(provider.Delta{Kind: provider.DeltaText, Text: ch.Delta.Content})
			}
			for _, tc := range ch.Delta.ToolCalls {
				if _, ok := started[tc.Index]; !ok && tc.ID != "" {
					started[tc.Index] = tc.ID
					sink(provider.Delta{Kind: provider.DeltaToolStart, ToolCallID: tc.ID, ToolName: tc.Function.Name})
				}
				if tc.Function.Arguments != "" {
					sink(provider.Delta{Kind: provider.DeltaToolArgs, ToolCallID: started[tc.Index], Text: tc.Function.Arguments})
				}
			}
			if ch.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := stream.Err(); err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			return provider.Response{}, &provider.StatusError{Status: apiErr.StatusCode, Message: apiErr.Message + " " + apiErr.Code + " " + apiErr.RawJSON(), Err: fmt.Errorf("openai: %w", err)}
		}
		return provider.Response{}, fmt.Errorf("openai: %w", err)
	}
	if !finished || len(acc.Choices) == 0 {
		return provider.Response{}, errors.New("openai: the stream ended before the message did")
	}
	choice := acc.Choices[0]
	resp := provider.Response{Text: choice.Message.Content, StopReason: string(choice.FinishReason),
		Usage: provider.Usage{InputTokens: int(acc.Usage.PromptTokens), OutputTokens: int(acc.Usage.CompletionTokens),
			ThinkingTokens: int(acc.Usage.CompletionTokensDetails.ReasoningTokens)}}
	for _, tc := range choice.Message.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: args})
	}
	return resp, nil
}

func messages(req provider.Request) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser:
			if len(m.Attachments) == 0 {
				out = append(out, sdk.UserMessage(m.Text))
				break
			}
			parts := []sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart(m.Text)}
			for _, a := range m.Attachments {
				if a.Text != "" {
					parts = append(parts, sdk.TextContentPart(a.Text))
				}
				data := "data:" + a.Type + ";base64," + base64.StdEncoding.EncodeToString(a.Data)
				switch {
				case a.Data == nil:
				case a.Kind == session.AttachmentImage:
					parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: data}))
				case a.Kind == session.AttachmentPDF:
					parts = append(parts, sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{FileData: sdk.String(data), Filename: sdk.String(a.Name)}))
				}
			}
			out = append(out, sdk.UserMessage(parts))
		case provider.RoleTool:
			out = append(out, sdk.ToolMessage(m.Text, m.ToolCallID))
		case provider.RoleAssistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = sdk.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				args := string(c.Args)
				if !json.Valid(c.Args) {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args}}})
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}

func tools(in []provider.ToolSpec) []sdk.ChatCompletionToolUnionParam {
	var out []sdk.ChatCompletionToolUnionParam
	for _, t := range in {
		var params shared.FunctionParameters
		_ = json.Unmarshal(t.Schema, &params)
		out = append(out, sdk.ChatCompletionToolUnionParam{OfFunction: &sdk.ChatCompletionFunctionToolParam{
			Function: shared.FunctionDefinitionParam{Name: t.Name, Description: sdk.String(t.Description), Parameters: params}}})
	}
	return out
}
