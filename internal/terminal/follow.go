// Package terminal is what a person sees of a session at a terminal: its
// transcript rendered, a call and the analysis of it in words, text made
// safe to print, and the Follower that streams a session and asks the
// person at the terminal for approvals, answers, extensions and the next
// message.
package terminal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/internal/bound"
	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Follower streams a session until its work ends, answering questions at
// the terminal when interactive.
type Follower struct {
	Client *client.Client
	ID     string
	// Interactive asks the person at the terminal (In); otherwise a
	// question or an approval ends the run, saying how to give it.
	Interactive bool
	In          *bufio.Reader
	Out, Err    io.Writer
	// InProcess says the server stops when the command does (what a
	// detach says).
	InProcess bool
	// AutoAnswer, when set, answers every question (the demo's operator).
	AutoAnswer func(session.Question) session.AnswerPayload
	// NoSummary leaves the end-of-run summary to the caller (the demo).
	NoSummary bool
	// After is the last event already shown (attach renders the history
	// first); Converse asks for the next message when a turn ends
	// instead of ending the run (attach).
	After    int64
	Converse bool

	lines  chan string // lines read from In, by one reader
	inErr  error
	pinned map[string]*policy.Policy // the pinned policy of each session asking, read once
}

// ExitError ends a command with an exit status and the reason printed for
// the person.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

// still says the session is still in status (as far as it can tell).
func (f *Follower) still(ctx context.Context, status session.Status) func() bool {
	return func() bool {
		x, err := f.Client.Sessions().Get(ctx, f.ID)
		return err != nil || x.Status == status
	}
}

// errDecided ends a prompt whose question was settled meanwhile (by
// someone else, a stop, an interrupt).
var errDecided = errors.New("decided elsewhere")

// readLineWhile reads a line while open says the prompt still stands,
// asking it every second; errDecided once it does not.
func (f *Follower) readLineWhile(ctx context.Context, open func() bool) (string, error) {
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
func (f *Follower) readLine(ctx context.Context) (string, error) {
	if f.lines == nil {
		f.lines = make(chan string)
		go func() {
			for {
				line, err := f.In.ReadString('\n')
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

// Stream follows the session to the end of its work, without handling
// Ctrl-C (the demo, which ends on it).
func (f *Follower) Stream(ctx context.Context) error {
	r := &Renderer{w: f.Out}
	asked, extended := false, false
	var turnErr string
	err := f.Client.Sessions().Stream(ctx, f.ID, f.After, func(e session.Event) error {
		r.Event(e)
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
				return f.approve(ctx, r, f.ID, d)
			}
		case session.EventChildApproval:
			// A session this one delegated asks: the person here decides.
			var d session.ChildApproval
			_ = json.Unmarshal(e.Data, &d)
			return f.approve(ctx, r, d.Session, d.Call)
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
			if d.Status.Settled() && f.AutoAnswer == nil {
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
				r.Line("")
				if f.Converse {
					return f.next(ctx, r)
				}
				if turnErr != "" {
					return stopFollowing{&ExitError{Code: 1, Msg: "the turn failed: " + turnErr +
						fmt.Sprintf("\nthe session is still open: paddock sessions send %s \"…\"", f.ID)}}
				}
				return stopFollowing{}
			case session.StatusFailed:
				r.Line("")
				return stopFollowing{&ExitError{Code: 1, Msg: "session failed: " + d.Error + "\n" + retryAdvice(d.Error, f.ID)}}
			case session.StatusStopped:
				r.Line("")
				if x, err := f.Client.Sessions().Get(ctx, f.ID); err == nil && x.BudgetStopped() {
					return stopFollowing{&ExitError{Code: 3, Msg: "the session stopped: " + x.StopReason +
						fmt.Sprintf("\nits work is kept for review: paddock sessions diff %s   |   paddock sessions accept %s", f.ID, f.ID)}}
				}
				return stopFollowing{&ExitError{Code: 1, Msg: "session was stopped"}}
			}
		}
		return nil
	})
	if sf, ok := err.(stopFollowing); ok {
		if sf.err != nil {
			return sf.err
		}
		if !f.NoSummary {
			f.summary(ctx)
		}
		return nil
	}
	return err
}

// usage prints what the session has used so far: tokens, cost and the
// share of its spending cap.
func (f *Follower) usage(ctx context.Context, r *Renderer) {
	u, err := f.Client.Sessions().Usage(ctx, f.ID)
	if err != nil {
		return
	}
	budget := ""
	if x, err := f.Client.Sessions().Get(ctx, f.ID); err == nil {
		var sp spec.Agent
		if json.Unmarshal(x.AgentSpec, &sp) == nil && sp.MaxPerSessionUSD > 0 {
			budget = fmt.Sprintf(" of its $%.2f cap (%.0f%%)", sp.MaxPerSessionUSD, 100*u.CostUSD/sp.MaxPerSessionUSD)
		}
	}
	r.Line("· used so far: %d tokens in, %d out, $%.4f%s", u.InputTokens, u.OutputTokens, u.CostUSD, budget)
}

func (f *Follower) summary(ctx context.Context) {
	x, err := f.Client.Sessions().Get(ctx, f.ID)
	if err != nil {
		return
	}
	fmt.Fprintf(f.Out, "session %s is %s.\n", x.ID, x.Status)
	if d, err := f.Client.Review().Diff(ctx, x.ID); err == nil && len(d.Files) > 0 {
		fmt.Fprintf(f.Out, "changes in its working copy:\n")
		PrintFiles(f.Out, d.Files)
	}
	fmt.Fprintf(f.Out, "next: paddock sessions diff %s   |   paddock sessions accept %s   |   paddock sessions send %s \"…\"\n", x.ID, x.ID, x.ID)
}

// PrintFiles lists a diff's files, flagged ones marked.
func PrintFiles(w io.Writer, files []session.ChangedFile) {
	for _, f := range files {
		flag := ""
		if f.Flagged {
			flag = "  ⚑ " + f.Reason + ": review with care"
		}
		fmt.Fprintf(w, "  %-9s %s%s\n", f.Status, Visible(f.Path, false), flag)
	}
}

// extend asks at the terminal whether to grant a session whose budget ran
// out an extension; a run that cannot ask ends with exit status 3 and the
// command that grants it.
func (f *Follower) extend(ctx context.Context, r *Renderer, p session.Park) (bool, error) {
	parked := stopFollowing{&ExitError{Code: 3, Msg: "the session's budget ran out and it is parked: " + p.Detail +
		"\ngrant an extension: paddock sessions extend " + f.ID}}
	if !f.Interactive || f.AutoAnswer != nil {
		return false, parked
	}
	fmt.Fprint(f.Out, "  grant an extension? [y/N] ")
	r.midText = true
	line, err := f.readLineWhile(ctx, f.still(ctx, session.StatusAwaiting))
	if ctx.Err() != nil {
		return false, err
	}
	if errors.Is(err, errDecided) {
		r.Line("  (decided elsewhere, or the session ended)")
		return false, nil
	}
	if a := strings.TrimSpace(line); !strings.EqualFold(a, "y") && !strings.EqualFold(a, "yes") {
		return false, parked
	}
	if _, err := f.Client.Gates().Extend(ctx, f.ID, wire.ExtendRequest{Note: "granted at the terminal of paddock run"}); err != nil {
		return false, err
	}
	return true, nil
}

// approve decides a call waiting for permission: at the terminal when
// interactive, by the demo operator in the demo; otherwise it says how.
func (f *Follower) approve(ctx context.Context, r *Renderer, id string, d session.ToolCallData) error {
	yes := false
	switch {
	case f.AutoAnswer != nil:
		r.Line("  (the demo operator approves %s)", d.Name)
		yes = true
	case !f.Interactive:
		r.Line("  waiting for approval: paddock approvals approve %s   (or reject)", d.Approval)
		return nil
	default:
		// The whole call, every line and argument, escaped: a person
		// approves only what they can see.
		r.Line("  %s asks to run:\n%s", Visible(d.Name, false), CallText(d.Name, d.Args))
		if f.pinned == nil {
			f.pinned = map[string]*policy.Policy{}
		}
		if _, ok := f.pinned[id]; !ok {
			if x, err := f.Client.Sessions().Get(ctx, id); err == nil {
				f.pinned[id], _ = policy.Pinned(x.Policy)
			}
		}
		if text := AnalysisText(f.pinned[id], d.Name, d.Args); text != "" {
			r.Line("%s", text)
		}
		fmt.Fprintf(f.Out, "  allow this %s call (%s)? [y/N] ", Visible(d.Name, false), Visible(d.Rule, false))
		r.midText = true
		line, err := f.readLineWhile(ctx, func() bool {
			pending, err := f.Client.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: id, Status: session.ApprovalPending})
			return err != nil || slices.ContainsFunc(pending, func(a session.Approval) bool { return a.ID == d.Approval })
		})
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, errDecided) {
			r.Line("  (decided elsewhere, or the turn ended)")
			return nil
		}
		if err != nil && strings.TrimSpace(line) == "" {
			// End of input is no decision: the call keeps waiting.
			return stopFollowing{&ExitError{Code: 2, Msg: fmt.Sprintf("no decision on standard input; the call waits for one:\n"+
				"paddock approvals approve %s   (or: paddock approvals reject %s)", d.Approval, d.Approval)}}
		}
		yes = strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
	}
	_, err := f.Client.Gates().Decide(ctx, d.Approval, yes, "decided at the terminal of paddock run")
	return err
}

// next asks for the session's next message (attach): an empty line or the
// end of input detaches, leaving the session awaiting.
func (f *Follower) next(ctx context.Context, r *Renderer) error {
	fmt.Fprint(f.Out, "› message (empty line to detach): ")
	r.midText = true
	line, err := f.readLineWhile(ctx, f.still(ctx, session.StatusAwaiting))
	if ctx.Err() != nil {
		return err
	}
	if errors.Is(err, errDecided) {
		r.Line("")
		return nil // a message from elsewhere, or the end: the transcript says
	}
	msg := strings.TrimSpace(line)
	if msg == "" {
		r.Line("")
		return stopFollowing{errDetached}
	}
	data, _ := json.Marshal(session.MessagePayload{Message: msg})
	_, err = f.Client.Sessions().Send(ctx, f.ID, wire.SendRequest{Kind: session.KindMessage, Payload: data})
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
		parts = append(parts, Visible(shellWord(it.ID+"="+it.Options[0]), false))
		opts = append(opts, Visible(it.ID+": "+strings.Join(it.Options, ", "), false))
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

func (f *Follower) answer(ctx context.Context, r *Renderer, q session.Question) error {
	var p session.AnswerPayload
	switch {
	case f.AutoAnswer != nil:
		p = f.AutoAnswer(q)
	case !f.Interactive:
		return stopFollowing{&ExitError{Code: 2, Msg: "the agent asked a question and this run is non-interactive.\nanswer it: " + answerHint(f.ID, q)}}
	default:
		p = session.AnswerPayload{ToolCallID: q.ToolCallID, Answers: map[string]string{}}
		for _, item := range q.Questions {
			for i, o := range item.Options {
				fmt.Fprintf(f.Out, "    %d) %s\n", i+1, Visible(o, false))
			}
			last := ""
			for {
				fmt.Fprintf(f.Out, "  %s > ", Visible(item.ID, false))
				r.midText = true // the next output starts on a fresh line
				line, err := f.readLineWhile(ctx, f.still(ctx, session.StatusAwaiting))
				if ctx.Err() != nil {
					return err
				}
				if errors.Is(err, errDecided) {
					r.Line("  (answered elsewhere, or the session ended)")
					return nil
				}
				line = strings.TrimSpace(line)
				if err != nil && line == "" {
					return stopFollowing{&ExitError{Code: 2, Msg: "no answer on standard input; answer later: " + answerHint(f.ID, q)}}
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
				fmt.Fprintf(f.Out, "  %q is not one of the options: type 1-%d or an option as shown (or the same text again to send it as a note)\n", Visible(line, false), len(item.Options))
				last = line
			}
		}
	}
	data, _ := json.Marshal(p)
	_, err := f.Client.Sessions().Send(ctx, f.ID, wire.SendRequest{Kind: session.KindAnswer, Payload: data, IdempotencyKey: "answer/" + q.ToolCallID})
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

// Follow follows the session with Ctrl-C handled as a person at a
// terminal expects: the first interrupts the turn in flight (saying so),
// the second detaches, leaving the session to go on, and says how to
// come back to it.
func (f *Follower) Follow(ctx context.Context, first func(context.Context) error) error {
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
			fmt.Fprintf(f.Out, "\n^C: interrupting the turn in flight (Ctrl-C again detaches; the session goes on)\n")
			data, _ := json.Marshal(session.InterruptPayload{Reason: "Ctrl-C at the terminal"})
			if _, err := f.Client.Sessions().Send(ctx, f.ID, wire.SendRequest{Kind: session.KindInterrupt, Payload: data}); err != nil {
				fmt.Fprintf(f.Err, "paddock: the interrupt was not sent: %v\n", err)
			}
		}
	}()
	var err error
	if first != nil {
		err = unwrapStop(first(ctx))
	}
	if err == nil {
		err = f.Stream(ctx)
	}
	if !detached.Load() && !errors.Is(err, errDetached) {
		return err
	}
	code, how := 0, "detached"
	if detached.Load() {
		code, how = 130, "^C again: detached"
	}
	where := "it goes on"
	if f.InProcess {
		where = "it goes on when a server runs (paddock serve), as this command's in-process server stops now"
	}
	return &ExitError{Code: code, Msg: fmt.Sprintf("%s from session %s; %s.\ncome back to it: paddock attach %s", how, f.ID, where, f.ID)}
}

// unwrapStop is the error a stopFollowing carries.
func unwrapStop(err error) error {
	if sf, ok := err.(stopFollowing); ok {
		return sf.err
	}
	return err
}
