package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/poll"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/terminal"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workspace"
)

func newRun(g *globals) *cobra.Command {
	var req wire.CreateRequest
	var policyFile string
	var attach []string
	var empty bool
	cmd := &cobra.Command{
		Use:   `run [--agent NAME] [--model PROVIDER/MODEL] [--repo DIR | --repo URL [--ref REF] | --empty] [--attach FILE ...] "PROMPT"`,
		Short: "Run a session and stream it to the terminal",
		Long: "Run a session and stream its transcript. Without --server (or PADDOCK_SERVER) it starts an " +
			"in-process server on the data directory. The session works on a copy of the git repository you are in, as it is " +
			"(uncommitted and untracked files included; ignored ones left out); nothing reaches your checkout until you accept. Exits 0 when the session's work ends well, non-zero with the reason otherwise.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				req.Message = args[0]
			}
			if strings.TrimSpace(req.Message) == "" && req.Agent == "" {
				return &exitError{Code: 2, Msg: "run needs a prompt: paddock run [--repo DIR] \"what to do\" (or --agent NAME for an agent with an initialPrompt)"}
			}
			if policyFile != "" {
				data, err := os.ReadFile(policyFile)
				if err != nil {
					return &exitError{Code: 2, Msg: err.Error()}
				}
				req.Policy = string(data)
			}
			req.Project = g.project(req.Project)
			if err := g.runRepo(&req, empty); err != nil {
				return err
			}
			c, stop, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer stop()
			if req.Repo == "" {
				fmt.Fprintln(g.io.Err, "the agent works in an empty working copy")
			}
			if req.Attachments, err = c.Attach(cmd.Context(), req.Project, attach); err != nil {
				return err
			}
			x, err := c.Sessions().Create(cmd.Context(), req)
			if err != nil {
				return serverEnvHint(g, err)
			}
			fmt.Fprintf(g.io.Out, "session %s started: %s\n", x.ID, x.DisplayTitle)
			f := g.follower(c, x.ID)
			f.Interactive = !req.NonInteractive
			return f.Follow(cmd.Context(), nil)
		},
	}
	cmd.Flags().StringVar(&req.Project, "project", "", "project the session belongs to (its agents, policy and members; default $PADDOCK_PROJECT, else default)")
	cmd.Flags().StringVar(&req.Agent, "agent", "", "applied agent to run (default: an ad-hoc agent)")
	cmd.Flags().StringVar(&req.ReasoningEffort, "reasoning-effort", "", effortHelp)
	cmd.Flags().StringArrayVar(&attach, "attach", nil, attachHelp)
	cmd.Flags().StringVar(&req.Model, "model", "", "model as PROVIDER/MODEL (default: the agent's, or replay/demo)")
	cmd.Flags().StringVar(&req.Repo, "repo", "", "repository the session works on: a directory, copied as it is (default: the one you are in), or a remote repository a connection of the project grants (https://FORGE/OWNER/NAME or OWNER/NAME)")
	cmd.Flags().StringVar(&req.Ref, "ref", "", "with a remote --repo: the branch, tag, commit or pull request (#N) the copy starts from (default: its default branch)")
	cmd.Flags().BoolVar(&empty, "empty", false, "start from an empty working copy instead of a repository")
	cmd.Flags().BoolVar(&req.NonInteractive, "non-interactive", false, "never prompt: a question stops the run; a call needing permission is rejected unless --approver")
	cmd.Flags().StringVar(&req.Approver, "approver", "", "identity who approves this run's calls (with paddock approvals approve)")
	cmd.Flags().StringVar(&policyFile, "policy", "", "policy YAML that tightens the project's policy for this run only (it never loosens it; a project's policy is set with paddock policy apply)")
	return cmd
}

// runRepo settles the repository a run works on: --repo made absolute;
// else, on this machine's server, the git repository the working
// directory is in (outside one, run says how to start); --empty, or a
// remote server without --repo, works in an empty copy.
func (g *globals) runRepo(req *wire.CreateRequest, empty bool) error {
	if empty {
		if req.Repo != "" {
			return &exitError{Code: 2, Msg: "give --repo DIR or --empty, not both"}
		}
		return nil
	}
	if req.Repo != "" {
		if strings.Contains(req.Repo, "://") {
			return nil // a remote repository, on a connection of the project
		}
		if _, err := os.Stat(req.Repo); err != nil && forge.IsRemote(req.Repo) {
			return nil // OWNER/NAME on a connection of the project
		}
		if req.Ref != "" {
			return &exitError{Code: 2, Msg: "--ref names where a remote repository's copy starts (--repo https://FORGE/OWNER/NAME or OWNER/NAME); a local repository is copied as it is"}
		}
		abs, err := filepath.Abs(req.Repo)
		req.Repo = abs
		return err
	}
	if req.Ref != "" {
		return &exitError{Code: 2, Msg: "--ref goes with a remote repository: --repo https://FORGE/OWNER/NAME (or OWNER/NAME) --ref " + req.Ref}
	}
	if g.cfg.Server != "" {
		return nil // a remote server cannot read this machine's files
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	top, ok := workspace.Enclosing(wd)
	if !ok {
		return &exitError{Code: 2, Msg: fmt.Sprintf("paddock run works on the git repository you are in, and %s is not in one.\n"+
			"cd into a repository, name one with --repo DIR, or start from nothing with --empty\n"+
			"(a new repository: git init && git add -A && git commit -m start)", wd)}
	}
	if home := g.io.Getenv("HOME"); home != "" && filepath.Clean(home) == top && wd != top {
		return &exitError{Code: 2, Msg: fmt.Sprintf("the repository around %s is your home directory %s (kept in git): a session would work on all of it.\n"+
			"cd into a project's repository, or name it with --repo %s if that is what you mean", wd, top, top)}
	}
	req.Repo = top
	return nil
}

// serverEnvHint explains a provider key missing on a server when this
// client's environment has it: the server running the session reads its
// own environment.
func serverEnvHint(g *globals, err error) error {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		if strings.Contains(err.Error(), v+" is not set") && g.io.Getenv(v) != "" {
			return fmt.Errorf("%w\n%s is set here, but the server runs the session and reads its own environment: "+
				"set it (and any %s_BASE_URL) in the environment of `paddock serve`", err, v, strings.TrimSuffix(v, "_API_KEY"))
		}
	}
	return err
}

// follower is a terminal.Follower of session id through c, at this
// command's terminal.
func (g *globals) follower(c *client.Client, id string) *terminal.Follower {
	return &terminal.Follower{Client: c, ID: id, In: bufio.NewReader(g.io.In), Out: g.io.Out, Err: g.io.Err, InProcess: g.inProcess}
}

func newDemo(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run a scripted session end to end on a throwaway repository",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			repo, err := os.MkdirTemp("", "paddock-demo-repo-")
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# Demo\n\nHelo, world!\n"), 0o644); err != nil {
				return err
			}
			if err := workspace.Seed(ctx, repo, "initial"); err != nil {
				return fmt.Errorf("make the demo repository: %w (is git installed?)", err)
			}
			fmt.Fprintf(g.io.Out, "demo repository: %s (README.md has a typo)\n", repo)
			c, stop, err := g.connect(ctx)
			if err != nil {
				return err
			}
			defer stop()
			// The demo agent uses only file tools and questions, so the demo
			// runs even where bubblewrap is not installed yet.
			if _, err := c.Projects().Apply(ctx, []byte(demoAgent)); err != nil {
				return err
			}
			x, err := c.Sessions().Create(ctx, wire.CreateRequest{Agent: "demo", Repo: repo, Message: "Fix the typo in the README."})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s started: %s\n", x.ID, x.DisplayTitle)
			f := g.follower(c, x.ID)
			f.NoSummary, f.AutoAnswer = true, func(q session.Question) session.AnswerPayload {
				fmt.Fprintln(g.io.Out, "  (the demo operator answers: yes)")
				ans := map[string]string{}
				for _, item := range q.Questions {
					ans[item.ID] = "yes"
				}
				return session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: ans}
			}
			if err := f.Stream(ctx); err != nil {
				return err
			}
			d, err := c.Review().Diff(ctx, x.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "\nthe agent's work, as the diff you would accept (the repository itself is untouched):\n")
			terminal.PrintFiles(g.io.Out, d.Files)
			fmt.Fprintf(g.io.Out, "\n%s", terminal.Visible(d.Patch, true))
			// The demo cleans up after itself: its session stops (which
			// removes the working copy) and its throwaway repository goes.
			payload, _ := json.Marshal(session.StopPayload{Reason: "the demo is over"})
			if _, err := c.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindStop, Payload: payload, IdempotencyKey: "demo-stop/" + x.ID}); err != nil {
				return err
			}
			waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
			err = poll.Until(waitCtx, 100*time.Millisecond, func() (bool, error) {
				s, err := c.Sessions().Get(waitCtx, x.ID)
				return err == nil && s.Status == session.StatusStopped, nil
			})
			cancel()
			if err != nil {
				return fmt.Errorf("the demo session %s did not stop within a minute", x.ID)
			}
			if err := os.RemoveAll(repo); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "\nthe demo session is stopped and its throwaway repository removed.\n"+
				"try it on a repository of yours (it plays the same script): paddock run --model replay/demo --repo DIR \"fix the typo\"\n")
			return nil
		},
	}
}

const demoAgent = `name: demo
description: the scripted agent of paddock demo
model: replay/demo
tools: [list_dir, read_file, edit_file, write_file, ask_user]
displayTitle: "Demo: {{input}}"
`

func newAttach(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ID",
		Short: "Take a session back in the terminal: its transcript live, its approvals, questions and extensions, your next messages",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, stop, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer stop()
			return g.follower(c, args[0]).Attach(cmd.Context())
		},
	}
}

const effortHelp = "how much the model reasons on this turn: minimal, low, medium or high, as the model takes them (default: the agent's reasoningEffort)"

const attachHelp = "a file to give with the message (repeatable): an image, a PDF or a text file, at most 10 MiB; the agent also finds it read-only at .paddock/attachments/NAME"
