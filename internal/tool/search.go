package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
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
		args := []string{"-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-C", env.Root, "grep", "-n", "-I", "--untracked", "-E", "--no-color"}
		if a.IgnoreCase {
			args = append(args, "-i")
		}
		args = append(args, "-e", a.Pattern, "--", p)
		cmd := exec.CommandContext(ctx, "git", args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return Result{Output: "no matches"}, nil
		}
		if err != nil {
			return Result{}, fmt.Errorf("search: %v: %s", err, strings.TrimSpace(errb.String()))
		}
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if len(lines) > maxMatches {
			lines = append(lines[:maxMatches], fmt.Sprintf("[%d more matches not shown; narrow the pattern or the path]", len(lines)-maxMatches))
		}
		return Result{Output: strings.Join(lines, "\n")}, nil
	},
}
