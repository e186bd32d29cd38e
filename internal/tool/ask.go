package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/paddock-dev/paddock/internal/session"
)

// AskUser is the name of the structured-question tool.
const AskUser = "ask_user"

var askUser = Tool{
	Name: AskUser,
	Schema: json.RawMessage(`{"type":"object","properties":{"questions":{"type":"array","minItems":1,"items":{"type":"object",` +
		`"properties":{"id":{"type":"string"},"question":{"type":"string"},"options":{"type":"array","items":{"type":"string"}},"allowOther":{"type":"boolean"}},` +
		`"required":["id","question"],"additionalProperties":false}}},"required":["questions"],"additionalProperties":false}`),
	run: func(_ context.Context, _ Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Questions []session.QuestionItem `json:"questions"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if len(a.Questions) == 0 {
			return Result{}, fmt.Errorf("%w: questions needs at least one question", ErrArgs)
		}
		seen := map[string]bool{}
		for i, q := range a.Questions {
			if q.ID == "" || q.Question == "" {
				return Result{}, fmt.Errorf("%w: questions[%d] needs an id and a question", ErrArgs, i)
			}
			if seen[q.ID] {
				return Result{}, fmt.Errorf("%w: question id %q is used twice", ErrArgs, q.ID)
			}
			seen[q.ID] = true
		}
		return Result{Question: &session.Question{Questions: a.Questions}}, nil
	},
}
