package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Delegate is the name of the tool an agent hands part of its task to a
// sub-agent with.
const Delegate = "delegate"

// Delegation is what a delegate call asks: the task, and optionally
// narrower tools, a stricter policy, a smaller budget and another model.
// Whatever it asks, the delegated session never gets a tool, a verdict
// or a budget the delegating one does not have.
type Delegation struct {
	Task   string   `json:"task"`
	Tools  []string `json:"tools,omitempty"`
	Policy string   `json:"policy,omitempty"`
	Budget *Budget  `json:"budget,omitempty"`
	Model  string   `json:"model,omitempty"`
}

// Budget is a delegation's budget; zero fields take all that is left.
type Budget struct {
	Actions  int     `json:"actions,omitempty"`
	Minutes  int     `json:"minutes,omitempty"`
	Tokens   int64   `json:"tokens,omitempty"`
	SpendUSD float64 `json:"spendUsd,omitempty"`
}

// MaxReport bounds the report a delegated session returns, in bytes.
const MaxReport = 16 << 10

var delegate = Tool{
	Name: Delegate,
	Schema: json.RawMessage(`{"type":"object","properties":{` +
		`"task":{"type":"string","maxLength":100000},` +
		`"tools":{"type":"array","items":{"type":"string","maxLength":100},"maxItems":100},` +
		`"policy":{"type":"string","maxLength":65536},` +
		`"budget":{"type":"object","properties":{"actions":{"type":"integer","minimum":1},"minutes":{"type":"integer","minimum":1},` +
		`"tokens":{"type":"integer","minimum":1},"spendUsd":{"type":"number","exclusiveMinimum":0}},"additionalProperties":false},` +
		`"model":{"type":"string","maxLength":200}},"required":["task"],"additionalProperties":false}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var d Delegation
		if err := decodeFor(env, raw, &d); err != nil {
			return Result{}, err
		}
		if err := required("task", d.Task); err != nil {
			return Result{}, err
		}
		if b := d.Budget; b != nil && (b.Actions < 0 || b.Minutes < 0 || b.Tokens < 0 || b.SpendUSD < 0) {
			return Result{}, fmt.Errorf("%w: a budget's bounds are positive (leave one out for all that is left)", ErrArgs)
		}
		x, err := env.Sessions.Delegate(ctx, d, env.Run)
		if err != nil {
			return Result{}, err
		}
		return Result{Output: "delegated to session " + x.ID, Delegated: x.ID}, nil
	},
}

// Report is what a delegated session returns to the one that delegated:
// how it ended, its last words, and what of its work reached the
// delegating session's working copy.
type Report struct {
	Session string   `json:"session"`
	Status  string   `json:"status"`
	Report  string   `json:"report"`
	Applied []string `json:"applied,omitempty"`
	// Conflicts are files the child changed that changed in the
	// delegating copy meanwhile (another delegation's work): left out.
	Conflicts []string `json:"conflicts,omitempty"`
	Problem   string   `json:"problem,omitempty"`
}

// Text is the report as the delegating model reads it.
func (r Report) Text() string {
	data, _ := json.MarshalIndent(r, "", " ")
	return string(data)
}
