package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/paddock-dev/paddock/internal/workspace"
)

const maxMatches = 200

var search = Tool{
	Name:   "search",
	Schema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"ignoreCase":{"type":"boolean"}},"required":["pattern"],"additionalProperties":false}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Pattern    string `json:"pattern"`
			Path       string `json:"path"`
			IgnoreCase bool   `json:"ignoreCase"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if err := required("pattern", a.Pattern); err != nil {
			return Result{}, err
		}
		if _, err := regexp.Compile(a.Pattern); err != nil {
			return Result{}, fmt.Errorf("%w: pattern: %v", ErrArgs, err)
		}
		if a.Path == "" {
			a.Path = "."
		}
		p, err := cleanPath(a.Path)
		if err != nil {
			return Result{}, err
		}
		if env.Root == "" {
			return Result{}, errors.New("this session has no working copy")
		}
		// git grep searches tracked and untracked files and skips what
		// .gitignore excludes; no shell is involved, the pattern is one argument.
		lines, err := workspace.Grep(ctx, env.Root, a.Pattern, p, a.IgnoreCase)
		if err != nil {
			return Result{}, fmt.Errorf("search: %w", err)
		}
		if len(lines) == 0 {
			return Result{Output: "no matches"}, nil
		}
		if len(lines) > maxMatches {
			lines = append(lines[:maxMatches], fmt.Sprintf("[%d more matches not shown; narrow the pattern or the path]", len(lines)-maxMatches))
		}
		return Result{Output: strings.Join(lines, "\n")}, nil
	},
}
