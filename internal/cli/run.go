package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/poll"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workspace"
)

func newRun(g *globals) *cobra.Command {
	var req wire.CreateRequest
	var policyFile string
	cmd := &cobra.Command{
		Use:   `run [--agent NAME] [--model PROVIDER/MODEL] [--repo DIR] "PROMPT"`,
		Short: "Run a session and stream it to the terminal",
		Long: "Run a session and stream its transcript. Without --server (or PADDOCK_SERVER) it starts an " +
			"in-process server on the data directory. Exits 0 when the session's work ends well, non-zero with the reason otherwise.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				req.Message = args[0]
			}
			if strings.TrimSpace(req.Message) == "" && req.Agent == "" {
				return &exitError{code: 2, msg: "run needs a prompt: paddock run [--repo DIR] \"what to do\" (or --agent NAME for an agent with an initialPrompt)"}
			}
			if policyFile != "" {
				data, err := os.ReadFile(policyFile)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				req.Policy = string(data)
			}
			req.Project = g.project(req.Project)
			if req.Repo != "" {
				abs, err := filepath.Abs(req.Repo)
				if err != nil {
					return err
				}
				req.Repo = abs
			}
			c, stop, err := g.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer stop()
			if req.Repo == "" {
				fmt.Fprintln(g.io.Err, "no --repo: the agent works in an empty working copy")
			}
			x, err := c.Sessions().Create(cmd.Context(), req)
			if err != nil {
				return serverEnvHint(g, err)
			}
			fmt.Fprintf(g.io.Out, "session %s started: %s\n", x.ID, x.DisplayTitle)
			f := &follower{g: g, c: c, id: x.ID, interactive: !req.NonInteractive, in: bufio.NewReader(g.io.In)}
			return f.interruptible(cmd.Context(), nil)
		},
	}
	cmd.Flags().StringVar(&req.Project, "project", "", "project the session belongs to (its agents, policy and members; default $PADDOCK_PROJECT, else default)")
	cmd.Flags().StringVar(&req.Agent, "agent", "", "applied agent to run (default: an ad-hoc agent)")
	cmd.Flags().StringVar(&req.Model, "model", "", "model as PROVIDER/MODEL (default: the agent's, or replay/demo)")
	cmd.Flags().StringVar(&req.Repo, "repo", "", "repository the session works on (a copy of it)")
	cmd.Flags().BoolVar(&req.NonInteractive, "non-interactive", false, "never prompt: a question stops the run; a call needing permission is rejected unless --approver")
	cmd.Flags().StringVar(&req.Approver, "approver", "", "identity who approves this run's calls (with paddock approvals approve)")
	cmd.Flags().StringVar(&policyFile, "policy", "", "policy YAML that tightens the project's policy for this run only (it never loosens it; a project's policy is set with paddock policy apply)")
	return cmd
}

// follower streams a session until its work ends, answering questions at
// the terminal when interactive.
type follower struct {
	g           *globals
	c           *client.Client
	id          string
	interactive bool
	in          *bufio.Reader
	// autoAnswer, when set, answers every question (the demo's operator).
	autoAnswer func(session.Question) session.AnswerPayload
	// noSummary leaves the end-of-run summary to the caller (the demo).
	noSummary bool
	// after is the last event already shown (attach renders the history
	// first); converse asks for the next message when a turn ends
	// instead of ending the run (attach).
	after    int64
	converse bool
	lines    chan string // lines read from in, by one reader
	inErr    error
	pinned   *policy.Policy // the session's pinned policy, read once
}

// still says the session is still in status (as far as it can tell).
func (f *follower) still(ctx context.Context, status session.Status) func() bool {
	return func() bool {
		x, err := f.c.Sessions().Get(ctx, f.id)
		return err != nil || x.Status == status
	}
}

// errDecided ends a prompt whose question was settled meanwhile (by
// someone else, a stop, an interrupt).
var errDecided = errors.New("decided elsewhere")

// readLineWhile reads a line while open says the prompt still stands,
// asking it every second; errDecided once it does not.
func (f *follower) readLineWhile(ctx context.Context, open func() bool) (string, error) {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
				if !open() {
					cancel(errDecided)
					return
				}
			}
		}
	}()
	line, err := f.readLine(pctx)
	if ctx.Err() == nil && context.Cause(pctx) == errDecided {
		return "", errDecided
	}
	return line, err
}

// readLine reads one line of the person's input; ctx ending (Ctrl-C
// twice) ends the wait. err is set at the end of input.
func (f *follower) readLine(ctx context.Context) (string, error) {
	if f.lines == nil {
		f.lines = make(chan string)
		go func() {
			for {
				line, err := f.in.ReadString('\n')
				if err != nil {
					f.inErr = err
					if line != "" {
						f.lines <- line
					}
					close(f.lines)
					return
				}
				f.lines <- line
			}
		}()
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case line, ok := <-f.lines:
		if !ok {
			return "", f.inErr
		}
		return line, nil
	}
}

type stopFollowing struct{ err error }

// errDetached ends following a session that goes on.
var errDetached = errors.New("detached")

func (stopFollowing) Error() string { return "done" }

func (f *follower) run(ctx context.Context) error {
	r := &renderer{w: f.g.io.Out}
	asked, extended := false, false
	var turnErr string
	err := f.c.Sessions().Stream(ctx, f.id, f.after, func(e session.Event) error {
		r.event(e)
		switch e.Kind {
		case session.EventPark:
			var d session.ParkData
			_ = json.Unmarshal(e.Data, &d)
			if d.Park.ResolvedAt == nil && d.Park.Reason == string(bound.AwaitingExtension) {
				granted, err := f.extend(ctx, r, d.Park)
				extended = granted
				return err
			}
		case session.EventToolCall:
			var d session.ToolCallData
			_ = json.Unmarshal(e.Data, &d)
			if d.State == session.CallAwaitingApproval {
				return f.approve(ctx, r, d)
			}
		case session.EventQuestion:
			var q session.Question
			_ = json.Unmarshal(e.Data, &q)
			asked = true
			return f.answer(ctx, r, q)
		case session.EventTurn:
			var d session.TurnData
			_ = json.Unmarshal(e.Data, &d)
			if d.Status == session.TurnFailed {
				turnErr = d.Error
			}
			if d.Status.Settled() && f.autoAnswer == nil {
				f.usage(ctx, r)
			}
		case session.EventStatus:
			var d session.StatusData
			_ = json.Unmarshal(e.Data, &d)
			switch d.Status {
			case session.StatusRunning:
				asked, turnErr, extended = false, "", false
			case session.StatusAwaiting:
				if asked || extended {
					return nil
				}
				r.line("")
				if f.converse {
					return f.next(ctx, r)
				}
				if turnErr != "" {
					return stopFollowing{&exitError{code: 1, msg: "the turn failed: " + turnErr +
						fmt.Sprintf("\nthe session is still open: paddock sessions send %s \"…\"", f.id)}}
				}
				return stopFollowing{}
			case session.StatusFailed:
				r.line("")
				return stopFollowing{&exitError{code: 1, msg: "session failed: " + d.Error + "\n" + retryAdvice(d.Error, f.id)}}
			case session.StatusStopped:
				r.line("")
				if x, err := f.c.Sessions().Get(ctx, f.id); err == nil && x.BudgetStopped() {
					return stopFollowing{&exitError{code: 3, msg: "the session stopped: " + x.StopReason +
						fmt.Sprintf("\nits work is kept for review: paddock sessions diff %s   |   paddock sessions accept %s", f.id, f.id)}}
				}
				return stopFollowing{&exitError{code: 1, msg: "session was stopped"}}
			}
		}
		return nil
	})
	if sf, ok := err.(stopFollowing); ok {
		if sf.err != nil {
			return sf.err
		}
		if !f.noSummary {
			f.summary(ctx)
		}
		return nil
	}
	return err
}

// usage prints what the session has used so far: tokens, cost and the
// share of its spending cap.
func (f *follower) usage(ctx context.Context, r *renderer) {
	u, err := f.c.Sessions().Usage(ctx, f.id)
	if err != nil {
		return
	}
	budget := ""
	if x, err := f.c.Sessions().Get(ctx, f.id); err == nil {
		var sp spec.Agent
		if json.Unmarshal(x.AgentSpec, &sp) == nil && sp.MaxPerSessionUSD > 0 {
			budget = fmt.Sprintf(" of its $%.2f cap (%.0f%%)", sp.MaxPerSessionUSD, 100*u.CostUSD/sp.MaxPerSessionUSD)
		}
	}
	r.line("· used so far: %d tokens in, %d out, $%.4f%s", u.InputTokens, u.OutputTokens, u.CostUSD, budget)
}

func (f *follower) summary(ctx context.Context) {
	x, err := f.c.Sessions().Get(ctx, f.id)
	if err != nil {
		return
	}
	fmt.Fprintf(f.g.io.Out, "session %s is %s.\n", x.ID, x.Status)
	if d, err := f.c.Review().Diff(ctx, x.ID); err == nil && len(d.Files) > 0 {
		fmt.Fprintf(f.g.io.Out, "changes in its working copy:\n")
		printFiles(f.g, d.Files)
	}
	fmt.Fprintf(f.g.io.Out, "next: paddock sessions diff %s   |   paddock sessions accept %s   |   paddock sessions send %s \"…\"\n", x.ID, x.ID, x.ID)
}

// printFiles lists a diff's files, flagged ones marked.
func printFiles(g *globals, files []session.ChangedFile) {
	for _, f := range files {
		flag := ""
		if f.Flagged {
			flag = "  ⚑ " + f.Reason + ": review with care"
		}
		fmt.Fprintf(g.io.Out, "  %-9s %s%s\n", f.Status, visible(f.Path, false), flag)
	}
}

// extend asks at the terminal whether to grant a session whose budget ran
// out an extension; a run that cannot ask ends with exit status 3 and the
// command that grants it.
func (f *follower) extend(ctx context.Context, r *renderer, p session.Park) (bool, error) {
	parked := stopFollowing{&exitError{code: 3, msg: "the session's budget ran out and it is parked: " + p.Detail +
		"\ngrant an extension: paddock sessions extend " + f.id}}
	if !f.interactive || f.autoAnswer != nil {
		return false, parked
	}
	fmt.Fprint(f.g.io.Out, "  grant an extension? [y/N] ")
	r.midText = true
	line, err := f.readLineWhile(ctx, f.still(ctx, session.StatusAwaiting))
	if ctx.Err() != nil {
		return false, err
	}
	if errors.Is(err, errDecided) {
		r.line("  (decided elsewhere, or the session ended)")
		return false, nil
	}
	if a := strings.TrimSpace(line); !strings.EqualFold(a, "y") && !strings.EqualFold(a, "yes") {
		return false, parked
	}
	if _, err := f.c.Gates().Extend(ctx, f.id, wire.ExtendRequest{Note: "granted at the terminal of paddock run"}); err != nil {
		return false, err
	}
	return true, nil
}

// approve decides a call waiting for permission: at the terminal when
// interactive, by the demo operator in the demo; otherwise it says how.
func (f *follower) approve(ctx context.Context, r *renderer, d session.ToolCallData) error {
	yes := false
	switch {
	case f.autoAnswer != nil:
		r.line("  (the demo operator approves %s)", d.Name)
		yes = true
	case !f.interactive:
		r.line("  waiting for approval: paddock approvals approve %s   (or reject)", d.Approval)
		return nil
	default:
		// The whole call, every line and argument, escaped: a person
		// approves only what they can see.
		r.line("  %s asks to run:\n%s", visible(d.Name, false), callText(d.Name, d.Args))
		if f.pinned == nil {
			if x, err := f.c.Sessions().Get(ctx, f.id); err == nil {
				f.pinned, _ = durable.PinnedPolicy(x)
			}
		}
		if text := analysisText(f.pinned, d.Name, d.Args); text != "" {
			r.line("%s", text)
		}
		fmt.Fprintf(f.g.io.Out, "  allow this %s call (%s)? [y/N] ", visible(d.Name, false), visible(d.Rule, false))
		r.midText = true
		line, err := f.readLineWhile(ctx, func() bool {
			pending, err := f.c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: f.id, Status: session.ApprovalPending})
			return err != nil || slices.ContainsFunc(pending, func(a session.Approval) bool { return a.ID == d.Approval })
		})
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, errDecided) {
			r.line("  (decided elsewhere, or the turn ended)")
			return nil
		}
		if err != nil && strings.TrimSpace(line) == "" {
			// End of input is no decision: the call keeps waiting.
			return stopFollowing{&exitError{code: 2, msg: fmt.Sprintf("no decision on standard input; the call waits for one:\n"+
				"paddock approvals approve %s   (or: paddock approvals reject %s)", d.Approval, d.Approval)}}
		}
		yes = strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
	}
	_, err := f.c.Gates().Decide(ctx, d.Approval, yes, "decided at the terminal of paddock run")
	return err
}

// next asks for the session's next message (attach): an empty line or the
// end of input detaches, leaving the session awaiting.
func (f *follower) next(ctx context.Context, r *renderer) error {
	fmt.Fprint(f.g.io.Out, "› message (empty line to detach): ")
	r.midText = true
	line, err := f.readLineWhile(ctx, f.still(ctx, session.StatusAwaiting))
	if ctx.Err() != nil {
		return err
	}
	if errors.Is(err, errDecided) {
		r.line("")
		return nil // a message from elsewhere, or the end: the transcript says
	}
	msg := strings.TrimSpace(line)
	if msg == "" {
		r.line("")
		return stopFollowing{errDetached}
	}
	data, _ := json.Marshal(session.MessagePayload{Message: msg})
	_, err = f.c.Sessions().Send(ctx, f.id, wire.SendRequest{Kind: session.KindMessage, Payload: data})
	return err
}

// answerHint is a command that answers q as typed: each item's first
// option (all of them listed), or a free-text response.
func answerHint(id string, q session.Question) string {
	parts := []string{"paddock sessions answer", id, q.ToolCallID}
	var opts []string
	for _, it := range q.Questions {
		if len(it.Options) == 0 {
			continue
		}
		parts = append(parts, visible(shellWord(it.ID+"="+it.Options[0]), false))
		opts = append(opts, visible(it.ID+": "+strings.Join(it.Options, ", "), false))
	}
	if len(opts) == 0 {
		return strings.Join(append(parts, `--response "…"`), " ")
	}
	return strings.Join(parts, " ") + "   (options " + strings.Join(opts, "; ") + `; or --response "…" instead)`
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=_-.,/:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (f *follower) answer(ctx context.Context, r *renderer, q session.Question) error {
	var p session.AnswerPayload
	switch {
	case f.autoAnswer != nil:
		p = f.autoAnswer(q)
	case !f.interactive:
		return stopFollowing{&exitError{code: 2, msg: "the agent asked a question and this run is non-interactive.\nanswer it: " + answerHint(f.id, q)}}
	default:
		p = session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{}}
		for _, item := range q.Questions {
			for i, o := range item.Options {
				fmt.Fprintf(f.g.io.Out, "    %d) %s\n", i+1, visible(o, false))
			}
			last := ""
			for {
				fmt.Fprintf(f.g.io.Out, "  %s > ", visible(item.ID, false))
				r.midText = true // the next output starts on a fresh line
				line, err := f.readLineWhile(ctx, f.still(ctx, session.StatusAwaiting))
				if ctx.Err() != nil {
					return err
				}
				if errors.Is(err, errDecided) {
					r.line("  (answered elsewhere, or the session ended)")
					return nil
				}
				line = strings.TrimSpace(line)
				if err != nil && line == "" {
					return stopFollowing{&exitError{code: 2, msg: "no answer on standard input; answer later: " + answerHint(f.id, q)}}
				}
				if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(item.Options) {
					line = item.Options[n-1]
				}
				if len(item.Options) == 0 || item.AllowOther || slices.Contains(item.Options, line) {
					p.Answers[item.ID] = line
					break
				}
				if line != "" && line == last {
					// Typed twice: a note, not an option, goes as the response.
					p.Response = strings.TrimSpace(p.Response + "\n" + item.ID + ": " + line)
					break
				}
				r.midText = false
				fmt.Fprintf(f.g.io.Out, "  %q is not one of the options: type 1-%d or an option as shown (or the same text again to send it as a note)\n", visible(line, false), len(item.Options))
				last = line
			}
		}
	}
	data, _ := json.Marshal(p)
	_, err := f.c.Sessions().Send(ctx, f.id, wire.SendRequest{Kind: session.KindAnswer, Payload: data, IdempotencyKey: "answer/" + q.ToolCallID})
	return err
}

// retryAdvice says whether retrying a failed session can help: a failure
// to prepare the session (its repository, its model, its sandbox) repeats
// until its cause is fixed.
func retryAdvice(reason, id string) string {
	if strings.HasPrefix(reason, "provisioning failed") {
		return "this failure will repeat until its cause is fixed; once it is: paddock sessions retry " + id
	}
	return "retry it: paddock sessions retry " + id
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
			f := &follower{g: g, c: c, id: x.ID, noSummary: true, autoAnswer: func(q session.Question) session.AnswerPayload {
				fmt.Fprintln(g.io.Out, "  (the demo operator answers: yes)")
				ans := map[string]string{}
				for _, item := range q.Questions {
					ans[item.ID] = "yes"
				}
				return session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: ans}
			}}
			if err := f.run(ctx); err != nil {
				return err
			}
			d, err := c.Review().Diff(ctx, x.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "\nthe agent's work, as the diff you would accept (the repository itself is untouched):\n")
			printFiles(g, d.Files)
			fmt.Fprintf(g.io.Out, "\n%s", visible(d.Patch, true))
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

// interruptible follows the session with Ctrl-C handled as a person at a
// terminal expects: the first interrupts the turn in flight (saying so),
// the second detaches, leaving the session to go on, and says how to
// come back to it.
func (f *follower) interruptible(ctx context.Context, first func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	var detached atomic.Bool
	go func() {
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-sig:
			}
			if n > 1 {
				detached.Store(true)
				cancel()
				return
			}
			fmt.Fprintf(f.g.io.Out, "\n^C: interrupting the turn in flight (Ctrl-C again detaches; the session goes on)\n")
			data, _ := json.Marshal(session.InterruptPayload{Reason: "Ctrl-C at the terminal"})
			if _, err := f.c.Sessions().Send(ctx, f.id, wire.SendRequest{Kind: session.KindInterrupt, Payload: data}); err != nil {
				fmt.Fprintf(f.g.io.Err, "paddock: the interrupt was not sent: %v\n", err)
			}
		}
	}()
	var err error
	if first != nil {
		err = unwrapStop(first(ctx))
	}
	if err == nil {
		err = f.run(ctx)
	}
	if !detached.Load() && !errors.Is(err, errDetached) {
		return err
	}
	code, how := 0, "detached"
	if detached.Load() {
		code, how = 130, "^C again: detached"
	}
	where := "it goes on"
	if f.g.inProcess {
		where = "it goes on when a server runs (paddock serve), as this command's in-process server stops now"
	}
	return &exitError{code: code, msg: fmt.Sprintf("%s from session %s; %s.\ncome back to it: paddock attach %s", how, f.id, where, f.id)}
}

func newAttach(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ID",
		Short: "Take a session back in the terminal: its transcript live, its approvals, questions and extensions, your next messages",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, stop, err := g.connect(ctx)
			if err != nil {
				return err
			}
			defer stop()
			id := args[0]
			x, err := c.Sessions().Get(ctx, id)
			if err != nil {
				return err
			}
			events, err := c.Sessions().Events(ctx, id, 0)
			if err != nil {
				return err
			}
			r := &renderer{w: g.io.Out}
			f := &follower{g: g, c: c, id: id, interactive: true, in: bufio.NewReader(g.io.In), converse: true}
			waiting := map[string]session.ToolCallData{} // by approval
			open := map[string]session.Question{}        // by call
			for _, e := range events {
				r.event(e)
				f.after = e.Seq
				switch e.Kind {
				case session.EventToolCall:
					var d session.ToolCallData
					if json.Unmarshal(e.Data, &d) == nil && d.State == session.CallAwaitingApproval {
						waiting[d.Approval] = d
					}
				case session.EventQuestion:
					var q session.Question
					if json.Unmarshal(e.Data, &q) == nil {
						open[q.ToolCallID] = q
					}
				case session.EventAnswer:
					var a session.AnswerPayload
					if json.Unmarshal(e.Data, &a) == nil {
						delete(open, a.ToolCallID)
					}
				}
			}
			r.line("")
			if x.Status.Terminal() {
				return &exitError{code: 1, msg: fmt.Sprintf("session %s is %s: there is nothing to attach to", id, x.Status)}
			}
			fmt.Fprintf(g.io.Out, "attached to session %s (%s); Ctrl-C interrupts the turn, twice detaches\n", id, x.Status)
			pending, err := c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: id, Status: session.ApprovalPending})
			if err != nil {
				return err
			}
			// What the session waits on now is asked first, Ctrl-C already
			// handled as everywhere in attach.
			return f.interruptible(ctx, func(ctx context.Context) error {
				asked := false
				for _, ap := range pending {
					if d, ok := waiting[ap.ID]; ok {
						asked = true
						if err := f.approve(ctx, r, d); err != nil {
							return err
						}
					}
				}
				for _, q := range open {
					if x.Status == session.StatusAwaiting {
						asked = true
						if err := f.answer(ctx, r, q); err != nil {
							return err
						}
					}
				}
				if !asked && x.Status == session.StatusAwaiting {
					return f.next(ctx, r)
				}
				return nil
			})
		},
	}
}

// unwrapStop is the error a stopFollowing carries.
func unwrapStop(err error) error {
	if sf, ok := err.(stopFollowing); ok {
		return sf.err
	}
	return err
}
