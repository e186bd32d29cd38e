package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/terminal"
	"github.com/paddock-dev/paddock/internal/wire"
)

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newSessions(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Aliases: []string{"session", "s"}, Short: "List, watch and steer sessions"}
	var f session.Filter
	var status string
	var limit int
	var quiet, parked, tree bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List sessions (newest first; archived ones with --archived)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if parked {
				return listParked(cmd, g, f, quiet)
			}
			f.Status = session.Status(status)
			if limit < 1 {
				return &exitError{Code: 2, Msg: "--limit: want a positive number"}
			}
			f.Limit = limit + 1 // one more says whether rows were cut
			list, err := g.remote().Sessions().List(cmd.Context(), f)
			if err != nil {
				return err
			}
			cut := len(list) > limit
			if cut {
				list = list[:limit]
			}
			if quiet {
				for _, x := range list {
					fmt.Fprintln(g.io.Out, x.ID)
				}
				return nil
			}
			tw := table(g.io.Out)
			fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tTITLE\tACTIVITY\tCREATED")
			rows := session.Flat(list)
			if tree {
				rows = session.Forest(list)
			}
			for _, x := range rows {
				st := string(x.Status)
				if x.ArchivedAt != nil {
					st += " (archived)"
				}
				id := x.ID
				if x.Depth > 0 {
					// Started by the session above: delegated, or spawned.
					id = strings.Repeat("  ", x.Depth-1) + "└ " + id
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, x.Agent, st, terminal.OneLine(x.DisplayTitle, 40), terminal.OneLine(x.AmbientStatus, 30), x.CreatedAt.Local().Format("2006-01-02 15:04"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if cut {
				fmt.Fprintf(g.io.Out, "(the newest %d shown; there are more: --limit N)\n", limit)
			}
			return nil
		},
	}
	ls.Flags().StringVar(&f.Agent, "agent", "", "only sessions of this agent")
	ls.Flags().StringVar(&status, "status", "", "only sessions in this status (queued, running, awaiting, failed, stopped)")
	ls.Flags().BoolVar(&f.IncludeArchived, "archived", false, "include archived sessions")
	ls.Flags().IntVar(&limit, "limit", 50, "at most this many (the output says when there are more)")
	ls.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the IDs, newest first")
	ls.Flags().BoolVar(&tree, "tree", false, "show each session under the session whose agent started it (a delegation, a spawn)")
	ls.Flags().BoolVar(&parked, "parked", false, "only sessions waiting on someone (an extension, an approval, an answer, credits, the provider) and what each needs")

	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show a session as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := g.remote().Sessions().Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(g.io.Out, x)
		},
	}
	var follow, full bool
	logs := &cobra.Command{
		Use:   "logs ID",
		Short: "Print a session's transcript (-f to follow it live)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.remote()
			r := terminal.NewRenderer(g.io.Out, full, true)
			if follow {
				return c.Sessions().Stream(cmd.Context(), args[0], 0, func(e session.Event) error { r.Event(e); return nil })
			}
			events, err := c.Sessions().Events(cmd.Context(), args[0], 0)
			if err != nil {
				return err
			}
			for _, e := range events {
				r.Event(e)
			}
			r.Line("")
			return nil
		},
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "stream new events until the session ends")
	logs.Flags().BoolVar(&full, "full", false, "print every call's whole result (escaped), not the tail")

	var key string
	var noWait bool
	send := func(kind session.CommandKind, payload func(args []string) (any, error)) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			p, err := payload(args)
			if err != nil {
				return &exitError{Code: 2, Msg: err.Error()}
			}
			data, _ := json.Marshal(p)
			sent := time.Now()
			c, err := g.remote().Sessions().Send(cmd.Context(), args[0], wire.SendRequest{Kind: kind, Payload: data, IdempotencyKey: key})
			if err != nil {
				return err
			}
			switch {
			case noWait:
			case kind == session.KindStop:
				return awaitStopped(cmd.Context(), g, args[0], sent)
			case kind == session.KindInterrupt:
				return awaitSettled(cmd.Context(), g, args[0], c, sent)
			}
			fmt.Fprintf(g.io.Out, "%s command %s %s\n", kind, c.ID, c.State)
			fmt.Fprintf(g.io.Out, "watch it: paddock sessions logs -f %s\n", args[0])
			return nil
		}
	}
	var effort string
	var attach []string
	sendCmd := &cobra.Command{
		Use:   "send ID MESSAGE [--reasoning-effort LEVEL] [--attach FILE ...]",
		Short: "Send a message to a session",
		Args:  cobra.ExactArgs(2),
		RunE: send(session.KindMessage, func(a []string) (any, error) {
			files, err := g.remote().AttachTo(context.Background(), a[0], attach)
			return session.MessagePayload{Message: a[1], ReasoningEffort: effort, Attachments: files}, err
		}),
	}
	sendCmd.Flags().StringVar(&effort, "reasoning-effort", "", effortHelp)
	sendCmd.Flags().StringArrayVar(&attach, "attach", nil, attachHelp)
	answer := &cobra.Command{
		Use:   "answer ID TOOL_CALL_ID [QUESTION_ID=OPTION ...] [--response TEXT]",
		Short: "Answer a session's structured question",
		Args:  cobra.MinimumNArgs(2),
	}
	var response string
	answer.Flags().StringVar(&response, "response", "", "free-text answer")
	answer.RunE = send(session.KindAnswer, func(a []string) (any, error) {
		p := session.AnswerPayload{ToolCallID: a[1], Response: response, Answers: map[string]string{}}
		for _, kv := range a[2:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("answer %q: want QUESTION_ID=OPTION", kv)
			}
			p.Answers[k] = v
		}
		return p, nil
	})
	var reason string
	interrupt := &cobra.Command{
		Use:   "interrupt ID",
		Short: "Abort the turn in flight; the session survives",
		Args:  cobra.ExactArgs(1),
		RunE:  send(session.KindInterrupt, func([]string) (any, error) { return session.InterruptPayload{Reason: reason}, nil }),
	}
	interrupt.Flags().StringVar(&reason, "reason", "", "why")
	var stopP session.StopPayload
	stop := &cobra.Command{
		Use:   "stop ID",
		Short: "End a session: interrupt its work and stop it for good",
		Args:  cobra.ExactArgs(1),
		RunE:  send(session.KindStop, func([]string) (any, error) { return stopP, nil }),
	}
	stop.Flags().StringVar(&stopP.Reason, "reason", "", "why")
	stop.Flags().BoolVar(&stopP.Respawn, "respawn", false, "ask for a replacement session (replace: auto agents)")
	stop.Flags().StringVar(&stopP.Handoff, "handoff", "", "note for the successor (at most 20,000 characters)")
	for _, c := range []*cobra.Command{sendCmd, answer, interrupt, stop} {
		c.Flags().StringVar(&key, "idempotency-key", "", "send at most once under this key")
	}
	for _, c := range []*cobra.Command{interrupt, stop} {
		c.Flags().BoolVar(&noWait, "no-wait", false, "return once the command is recorded, without waiting for its effect")
	}
	archive := &cobra.Command{
		Use:   "archive ID",
		Short: "Archive a session (hidden from lists; a new message revives it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Sessions().Archive(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s archived\n", args[0])
			return nil
		},
	}
	retry := &cobra.Command{
		Use:   "retry ID",
		Short: "Start a fresh session for a failed session's input",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := g.remote().Sessions().Retry(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s retries %s\nwatch it: paddock sessions logs -f %s\n", x.ID, args[0], x.ID)
			return nil
		},
	}
	var extendNote string
	var spendCap float64
	extend := &cobra.Command{
		Use:   "extend ID [--spend-cap USD] [--note TEXT]",
		Short: "Grant a session parked on its budget one more extension (or, with --spend-cap, a higher spend cap); you are recorded as granting it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.remote().Gates().Extend(cmd.Context(), args[0], wire.ExtendRequest{Note: extendNote, SpendCapUSD: spendCap})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s: %s %s by %s; it carries on\nwatch it: paddock sessions logs -f %s\n", args[0], p.Reason, p.Resolution, p.ResolvedBy, args[0])
			return nil
		},
	}
	extend.Flags().StringVar(&extendNote, "note", "", "why (recorded)")
	extend.Flags().Float64Var(&spendCap, "spend-cap", 0, "raise the session's spend cap to this many USD (for a session parked on its cap)")
	var holdReason string
	hold := &cobra.Command{
		Use:   "hold ID [--reason TEXT]",
		Short: "Freeze a session for inspection: no turn starts, nothing is reaped, discarded or collected until released",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Sessions().Hold(cmd.Context(), args[0], holdReason); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s held\nrelease it: paddock sessions release %s\n", args[0], args[0])
			return nil
		},
	}
	hold.Flags().StringVar(&holdReason, "reason", "", "why (recorded)")
	release := &cobra.Command{
		Use:   "release ID",
		Short: "Release a held session: it picks up what waits",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Sessions().Release(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s released\n", args[0])
			return nil
		},
	}
	var waiveReason string
	waive := &cobra.Command{
		Use:   "waive ID --reason TEXT",
		Short: "Waive a session's delivery requirement (its work need not be accepted before it completes); you and the reason are recorded",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Sessions().Waive(cmd.Context(), args[0], waiveReason); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s: delivery requirement waived\n", args[0])
			return nil
		},
	}
	waive.Flags().StringVar(&waiveReason, "reason", "", "why (required, recorded)")
	var unparkNote string
	unpark := &cobra.Command{
		Use:   "unpark ID [--note TEXT]",
		Short: "Resume a session parked on credits or a provider outage once that is fixed; you are recorded",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.remote().Gates().Unpark(cmd.Context(), args[0], unparkNote)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s: %s %s; it carries on\nwatch it: paddock sessions logs -f %s\n", args[0], p.Reason, p.Resolution, args[0])
			return nil
		},
	}
	unpark.Flags().StringVar(&unparkNote, "note", "", "why (recorded)")
	var startNote string
	var reject bool
	approveStart := &cobra.Command{
		Use:   "approve-start ID [--reject] [--note TEXT]",
		Short: "Let a guest's session start (or, with --reject, stop it before it runs anything); you are recorded",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Gates().ApproveStart(cmd.Context(), args[0], !reject, startNote); err != nil {
				return err
			}
			if reject {
				fmt.Fprintf(g.io.Out, "session %s: start rejected; it is stopped and ran nothing\n", args[0])
				return nil
			}
			fmt.Fprintf(g.io.Out, "session %s: start approved; it runs now\nwatch it: paddock sessions logs -f %s\n", args[0], args[0])
			return nil
		},
	}
	approveStart.Flags().StringVar(&startNote, "note", "", "why (recorded)")
	approveStart.Flags().BoolVar(&reject, "reject", false, "stop the session instead")
	var as string
	identityCmd := &cobra.Command{
		Use:   "identity ID --as requester|service",
		Short: "Choose whose credentials a session you requested acts with: yours (you give them next) or the project's service identity",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.remote().Gates().ChooseIdentity(cmd.Context(), args[0], as)
			if err != nil {
				return err
			}
			if p.Reason == "awaiting_credentials" && p.ResolvedAt == nil {
				fmt.Fprintf(g.io.Out, "session %s acts as you; give your credentials: paddock sessions credentials %s\n", args[0], args[0])
				return nil
			}
			fmt.Fprintf(g.io.Out, "session %s acts as the project's service identity; it starts now\nwatch it: paddock sessions logs -f %s\n", args[0], args[0])
			return nil
		},
	}
	identityCmd.Flags().StringVar(&as, "as", "", "requester or service")
	_ = identityCmd.MarkFlagRequired("as")
	credentialsCmd := &cobra.Command{
		Use:   "credentials ID",
		Short: "Give a session you requested the credentials its agent acts with: each is read from standard input (one line each, not echoed on a terminal), never from the command line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := g.remote().Sessions().Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var sp spec.Agent
			_ = json.Unmarshal(x.AgentSpec, &sp)
			if len(sp.Environment.Credentials) == 0 {
				return fmt.Errorf("session %s's agent takes no credentials", args[0])
			}
			values, err := readSecrets(g, sp.Environment.Credentials)
			if err != nil {
				return err
			}
			if _, err := g.remote().Gates().SetCredentials(cmd.Context(), args[0], values); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s: %d credentials given (kept encrypted, deleted when it ends); it starts now\nwatch it: paddock sessions logs -f %s\n",
				args[0], len(values), args[0])
			return nil
		},
	}
	usage := &cobra.Command{
		Use:   "usage ID",
		Short: "Show a session's token usage and cost, per turn, and its disk use",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := g.remote().Sessions().Usage(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "input %d tokens, output %d tokens, cost $%.4f\n", u.InputTokens, u.OutputTokens, u.CostUSD)
			if d, err := g.remote().Sessions().Disk(cmd.Context(), args[0]); err == nil {
				budget := "not bounded"
				if d.Budget > 0 {
					budget = "of a " + clip.Bytes(d.Budget) + " budget"
				}
				fmt.Fprintf(g.io.Out, "disk: %s used by the working copy and caches, %s\n", clip.Bytes(d.Used), budget)
			}
			for turn, tu := range u.Turns {
				fmt.Fprintf(g.io.Out, "  %s: in %d, out %d, $%.4f\n", turn, tu.InputTokens, tu.OutputTokens, tu.CostUSD)
			}
			return nil
		},
	}
	cmd.AddCommand(usage, ls, get, logs, sendCmd, answer, interrupt, stop, archive, retry, extend, unpark, approveStart, identityCmd, credentialsCmd, hold, release, waive, newDiff(g), newAccept(g), newReject(g), newHistory(g))
	return cmd
}

// listParked prints the sessions waiting on someone and what each needs.
func listParked(cmd *cobra.Command, g *globals, f session.Filter, quiet bool) error {
	list, err := g.remote().Gates().Parked(cmd.Context(), f.Project, f.Agent)
	if err != nil {
		return err
	}
	if quiet {
		for _, p := range list {
			fmt.Fprintln(g.io.Out, p.Session.ID)
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintln(g.io.Out, "no session waits on anyone")
		return nil
	}
	tw := table(g.io.Out)
	fmt.Fprintln(tw, "ID\tAGENT\tWAITING ON\tNEEDS")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Session.ID, p.Session.Agent, p.Reason, p.Needs)
	}
	return tw.Flush()
}

// stopWait bounds how long stop and interrupt wait for their effect.
const stopWait = time.Minute

// awaitStopped waits for a stop (or a revocation) to take effect, so the
// person knows it did and an in-process server runs long enough to carry
// it out.
func awaitStopped(ctx context.Context, g *globals, id string, sent time.Time) error {
	return awaitEffect(ctx, g, sent, func() (bool, error) {
		s, err := g.remote().Sessions().Get(ctx, id)
		if err != nil || !s.Status.Terminal() {
			return false, err
		}
		if s.Status != session.StatusStopped {
			fmt.Fprintf(g.io.Out, "session %s had already ended (%s)\n", id, s.Status)
		} else {
			fmt.Fprintf(g.io.Out, "session %s stopped in %s: nothing queued runs, nothing in flight goes on\n", id, time.Since(sent).Round(10*time.Millisecond))
		}
		return true, nil
	}, fmt.Sprintf("session %s is not stopped yet", id), id)
}

// awaitSettled waits for an interrupt to take effect.
func awaitSettled(ctx context.Context, g *globals, id string, c session.Command, sent time.Time) error {
	return awaitEffect(ctx, g, sent, func() (bool, error) {
		cmds, err := g.remote().Sessions().Commands(ctx, id)
		for _, x := range cmds {
			if x.ID == c.ID {
				c = x
			}
		}
		if err != nil || c.State == session.CommandPending || c.State == session.CommandDispatching {
			return false, err
		}
		why := ""
		if c.Error != "" {
			why = ": " + terminal.Visible(c.Error, false)
		}
		fmt.Fprintf(g.io.Out, "interrupt %s in %s%s; the session goes on: paddock sessions send %s \"…\"\n", c.State, time.Since(sent).Round(10*time.Millisecond), why, id)
		return true, nil
	}, fmt.Sprintf("%s command %s is not carried out yet", c.Kind, c.ID), id)
}

// awaitEffect calls done every 100 ms until it says so, for at most stopWait. In
// local mode the server holding the data directory may go away meanwhile
// (a paddock run that held it ends when its session stops): the data
// directory is opened again and asked.
func awaitEffect(ctx context.Context, g *globals, sent time.Time, done func() (bool, error), late, id string) error {
	for {
		ok, err := done()
		if err != nil && g.cfg.Server == "" && !g.inProcess && time.Since(sent) < stopWait {
			g.local, ok, err = nil, false, nil
		}
		if err != nil || ok {
			return err
		}
		if time.Since(sent) > stopWait {
			return &exitError{Code: 1, Msg: fmt.Sprintf("%s after %s: is a server carrying it out? It will be when one runs (paddock serve).\n"+
				"watch it: paddock sessions logs -f %s", late, stopWait, id)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
