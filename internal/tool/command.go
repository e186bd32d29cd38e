package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/paddock-dev/paddock/internal/sandbox"
	"github.com/paddock-dev/paddock/internal/volume"
)

// RunCommand is the name of the shell tool; the policy analyzes its command.
const RunCommand = "run_command"

// Shell runs a command in the session's sandbox.
type Shell interface {
	Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error)
}

// Meter runs every command a metered shell runs (run), and watches it.
type Meter interface {
	Command(ctx context.Context, run func(context.Context) (sandbox.Result, error)) (sandbox.Result, error)
}

// Metered is shell whose every command meter runs and watches (shell
// itself without a meter; nil without a shell).
func Metered(shell Shell, meter Meter) Shell {
	if shell == nil || meter == nil {
		return shell
	}
	return metered{shell, meter}
}

type metered struct {
	Shell
	meter Meter
}

func (m metered) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	return m.meter.Command(ctx, func(ctx context.Context) (sandbox.Result, error) { return m.Shell.Run(ctx, c) })
}

// ErrNoSandbox says a command cannot run because no sandbox is available.
var ErrNoSandbox = errors.New("no sandbox available to run commands")

var runCommand = Tool{
	Name:   RunCommand,
	Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeoutSeconds":{"type":"integer","minimum":1}},"required":["command"],"additionalProperties":false}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Command        string `json:"command"`
			TimeoutSeconds int    `json:"timeoutSeconds"`
		}
		if err := decode(raw, &a); err != nil {
			return Result{}, err
		}
		if err := required("command", a.Command); err != nil {
			return Result{}, err
		}
		if env.Shell == nil {
			return Result{}, ErrNoSandbox
		}
		timeout := env.MaxDuration
		if a.TimeoutSeconds > 0 && (timeout == 0 || time.Duration(a.TimeoutSeconds)*time.Second < timeout) {
			timeout = time.Duration(a.TimeoutSeconds) * time.Second
		}
		var out bytes.Buffer
		var w io.Writer = &out
		if env.Live != nil {
			w = io.MultiWriter(&out, alwaysWrites{env.Live})
		}
		res, err := env.Shell.Run(ctx, sandbox.Command{Place: env.Place, ID: env.Run, Script: a.Command, Stdout: w, Stderr: w, Timeout: timeout, MaxOutput: env.MaxOutput})
		if err != nil {
			return Result{}, err
		}
		text := out.String()
		if res.Discarded > 0 {
			text += fmt.Sprintf("\n[output truncated: %d bytes beyond the %d-byte limit were discarded]", res.Discarded, out.Len())
		}
		if env.DiskBudget > 0 {
			switch volume.Exhausted(env.Root) {
			case "space":
				text += fmt.Sprintf("\n[the session's disk budget (%d MiB for the working copy and caches) is exhausted: writes fail with \"No space left on device\"; delete files you no longer need]", env.DiskBudget>>20)
			case "files":
				text += "\n[the session's file budget (the files the working copy and caches may hold) is exhausted: creating files fails with \"No space left on device\"; delete files you no longer need]"
			}
		}
		switch {
		case res.TimedOut:
			text += fmt.Sprintf("\n[timed out after %s; every process of the command was killed]", res.Duration.Round(time.Millisecond))
		case res.ExitCode != 0:
			text += fmt.Sprintf("\n[exit status %d]", res.ExitCode)
		}
		return Result{Output: text}, nil
	},
}

// alwaysWrites passes output on to a live viewer whose failure must not
// fail the command.
type alwaysWrites struct{ w io.Writer }

func (a alwaysWrites) Write(p []byte) (int, error) {
	_, _ = a.w.Write(p)
	return len(p), nil
}
