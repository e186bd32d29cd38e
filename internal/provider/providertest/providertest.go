// Package providertest is the conformance suite every streaming model
// provider passes: the real SDK client against an httptest server that
// replays recorded streams (testdata/*.sse of the provider's package).
package providertest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
)

// Reply is one recorded HTTP answer.
type Reply struct {
	Status   int
	Header   map[string]string
	Cassette string // file under testdata; empty for an error body
	Body     string
	// SSE is a stream given inline (a test's generated cassette).
	SSE string
	// Cut drops the connection after the body, mid-stream.
	Cut bool
}

// Server replays replies in order, one per request, and records requests.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	Requests []map[string]any
}

// NewServer starts a server for dir's cassettes.
func NewServer(t *testing.T, dir string, replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.Requests = append(s.Requests, body)
		if len(s.replies) == 0 {
			s.mu.Unlock()
			http.Error(w, `{"error":{"message":"no more recorded replies"}}`, http.StatusInternalServerError)
			return
		}
		rep := s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
		for k, v := range rep.Header {
			w.Header().Set(k, v)
		}
		body2 := rep.Body
		if rep.Cassette != "" {
			data, err := os.ReadFile(filepath.Join(dir, rep.Cassette))
			if err != nil {
				t.Errorf("cassette: %v", err)
				return
			}
			body2 = string(data)
			w.Header().Set("Content-Type", "text/event-stream")
		} else if rep.SSE != "" {
			body2 = rep.SSE
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if rep.Cut {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
			_, _ = buf.WriteString(chunk(body2))
			_ = buf.Flush()
			_ = conn.Close() // no terminating chunk: the stream is cut
			return
		}
		status := rep.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body2))
	}))
	t.Cleanup(s.Close)
	return s
}

func chunk(s string) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	_, _ = w.WriteString(strings.ToUpper(strconvHex(len(s))) + "\r\n" + s + "\r\n")
	_ = w.Flush()
	return b.String()
}

func strconvHex(n int) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var out []byte
	for n > 0 {
		out = append([]byte{digits[n%16]}, out...)
		n /= 16
	}
	return string(out)
}

// Make builds the provider under test against a base URL.
type Make func(baseURL string) provider.Provider

var request = provider.Request{
	Model:  "test-model",
	System: "You are careful.",
	Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "read the workflow"},
		{Role: provider.RoleAssistant, Text: "Reading.", ToolCalls: []provider.ToolCall{{ID: "t0", Name: "read_file", Args: json.RawMessage(`{"path":"x"}`)}}},
		{Role: provider.RoleTool, ToolCallID: "t0", Text: "contents"},
	},
	Tools: []provider.ToolSpec{{Name: "read_file", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
}

type collected struct {
	text  strings.Builder
	args  map[string]*strings.Builder
	start []string
}

func collect() (*collected, func(provider.Delta)) {
	c := &collected{args: map[string]*strings.Builder{}}
	return c, func(d provider.Delta) {
		switch d.Kind {
		case provider.DeltaText:
			c.text.WriteString(d.Text)
		case provider.DeltaToolStart:
			c.start = append(c.start, d.ToolCallID+":"+d.ToolName)
			c.args[d.ToolCallID] = &strings.Builder{}
		case provider.DeltaToolArgs:
			if b, ok := c.args[d.ToolCallID]; ok {
				b.WriteString(d.Text)
			}
		}
	}
}

// Run is the suite. dir holds split-args.sse, two-calls.sse, malformed.sse,
// text.sse and cut.sse; ids maps each cassette's call IDs.
func Run(t *testing.T, dir string, mk Make) {
	ctx := context.Background()
	t.Run("arguments split across many chunks", func(t *testing.T) {
		s := NewServer(t, dir, Reply{Cassette: "split-args.sse"})
		c, sink := collect()
		resp, err := mk(s.URL).Stream(ctx, request, sink)
		require.NoError(t, err)
		require.Equal(t, "Let me read it.", resp.Text)
		require.Equal(t, resp.Text, c.text.String(), "streamed text adds up")
		require.Len(t, resp.ToolCalls, 1)
		require.Equal(t, "read_file", resp.ToolCalls[0].Name)
		require.JSONEq(t, `{"path":"internal/engine/workflow.go"}`, string(resp.ToolCalls[0].Args))
		require.Equal(t, string(resp.ToolCalls[0].Args), c.args[resp.ToolCalls[0].ID].String(), "fragments add up")
		require.Len(t, c.start, 1)
		require.Positive(t, resp.Usage.OutputTokens)
		require.Len(t, s.Requests, 1)
	})
	t.Run("two tool calls in one response", func(t *testing.T) {
		s := NewServer(t, dir, Reply{Cassette: "two-calls.sse"})
		_, sink := collect()
		resp, err := mk(s.URL).Stream(ctx, request, sink)
		require.NoError(t, err)
		require.Len(t, resp.ToolCalls, 2)
		require.Equal(t, "read_file", resp.ToolCalls[0].Name)
		require.JSONEq(t, `{"path":"a.go"}`, string(resp.ToolCalls[0].Args))
		require.Equal(t, "list_dir", resp.ToolCalls[1].Name)
		require.JSONEq(t, `{"path":"."}`, string(resp.ToolCalls[1].Args))
		require.NotEqual(t, resp.ToolCalls[0].ID, resp.ToolCalls[1].ID)
	})
	t.Run("malformed arguments are returned as they came", func(t *testing.T) {
		s := NewServer(t, dir, Reply{Cassette: "malformed.sse"})
		_, sink := collect()
		resp, err := mk(s.URL).Stream(ctx, request, sink)
		require.NoError(t, err, "the provider does not guess; the gate will report the bad JSON to the model")
		require.Len(t, resp.ToolCalls, 1)
		require.False(t, json.Valid(resp.ToolCalls[0].Args))
	})
	t.Run("429 then success", func(t *testing.T) {
		s := NewServer(t, dir,
			Reply{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0", "Retry-After-Ms": "10"}, Body: `{"error":{"type":"rate_limit_error","message":"slow down"}}`},
			Reply{Cassette: "text.sse"})
		_, sink := collect()
		resp, err := mk(s.URL).Stream(ctx, request, sink)
		require.NoError(t, err)
		require.Equal(t, "All done.", resp.Text)
		require.Len(t, s.Requests, 2, "retried once")
	})
	t.Run("a stream cut in the middle is an error", func(t *testing.T) {
		s := NewServer(t, dir, Reply{Cassette: "cut.sse", Cut: true})
		_, sink := collect()
		_, err := mk(s.URL).Stream(ctx, request, sink)
		require.Error(t, err, "the activity retries the step; a half message is never taken as whole")
	})
	t.Run("the request carries the conversation and tools", func(t *testing.T) {
		s := NewServer(t, dir, Reply{Cassette: "text.sse"})
		_, sink := collect()
		_, err := mk(s.URL).Stream(ctx, request, sink)
		require.NoError(t, err)
		body, _ := json.Marshal(s.Requests[0])
		for _, want := range []string{"read the workflow", "contents", "read_file", "You are careful."} {
			require.Contains(t, string(body), want)
		}
	})
}

// Call is one tool call of a generated stream; Args is sent verbatim, in
// chunks, as the provider would stream it.
type Call struct {
	ID, Name, Args string
}

// textDelta is the size of the text deltas a generated stream carries, as
// a model streams tokens.
const textDelta = 16

func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// jsonString encodes s as a JSON string, keeping bytes that are not UTF-8
// as they are (a provider streaming broken text).
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// AnthropicStream is a Messages API stream of text, then the calls.
func AnthropicStream(text string, calls ...Call) string {
	var b strings.Builder
	ev := func(name, data string) { b.WriteString("event: " + name + "\ndata: " + data + "\n\n") }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_g","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	idx := 0
	if text != "" {
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, part := range chunks(text, textDelta) {
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+jsonString(part)+`}}`)
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		idx++
	}
	for _, c := range calls {
		i := strconv.Itoa(idx)
		ev("content_block_start", `{"type":"content_block_start","index":`+i+`,"content_block":{"type":"tool_use","id":`+jsonString(c.ID)+`,"name":`+jsonString(c.Name)+`,"input":{}}}`)
		for _, part := range chunks(c.Args, 8<<10) {
			ev("content_block_delta", `{"type":"content_block_delta","index":`+i+`,"delta":{"type":"input_json_delta","partial_json":`+jsonString(part)+`}}`)
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":`+i+`}`)
		idx++
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":20}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.String()
}

// OpenAIStream is a Chat Completions stream of text, then the calls.
func OpenAIStream(text string, calls ...Call) string {
	var b strings.Builder
	ev := func(delta, finish string) {
		b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n")
	}
	ev(`{"role":"assistant"}`, "null")
	if text != "" {
		for _, part := range chunks(text, textDelta) {
			ev(`{"content":`+jsonString(part)+`}`, "null")
		}
	}
	for i, c := range calls {
		n := strconv.Itoa(i)
		ev(`{"tool_calls":[{"index":`+n+`,"id":`+jsonString(c.ID)+`,"type":"function","function":{"name":`+jsonString(c.Name)+`,"arguments":""}}]}`, "null")
		for _, part := range chunks(c.Args, 8<<10) {
			ev(`{"tool_calls":[{"index":`+n+`,"function":{"arguments":`+jsonString(part)+`}}]}`, "null")
		}
	}
	finish := `"stop"`
	if len(calls) > 0 {
		finish = `"tool_calls"`
	}
	ev(`{}`, finish)
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}` + "\n\ndata: [DONE]\n\n")
	return b.String()
}
