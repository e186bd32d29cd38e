package cli

import (
	"fmt"
	"strconv"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/terminal"
	"github.com/spf13/cobra"
)

func newHistory(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "history ID [STEP STEP]",
		Short: "Show the working copy's state after each call that changed a file (one step per call); with two steps, what changed between them (0: the base)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 && len(args) != 3 {
				return fmt.Errorf("want a session, and optionally two steps: paddock sessions history ID [STEP STEP]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			steps, err := g.remote().Review().History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if len(args) == 3 {
				a, b, err := stepsOf(steps, args[1], args[2])
				if err != nil {
					return &exitError{Code: 2, Msg: err.Error()}
				}
				if a.Base != "" && b.Base != "" && a.Base != b.Base {
					fmt.Fprintf(g.io.Out, "an acceptance moved the base between steps %s and %s (%.12s, then %.12s): each file below is compared as it stood against its own step's base\n", args[1], args[2], a.Base, b.Base)
				}
				changes := session.StepDiff(a, b)
				if len(changes) == 0 {
					fmt.Fprintf(g.io.Out, "no file differs between step %s and step %s\n", args[1], args[2])
				}
				for _, c := range changes {
					fmt.Fprintf(g.io.Out, "%-9s %s\n", c.Status, terminal.Visible(c.Path, false))
				}
				return nil
			}
			if len(steps) == 0 {
				fmt.Fprintf(g.io.Out, "no call of session %s has changed a file yet\n", args[0])
				return nil
			}
			for _, c := range steps {
				fmt.Fprintf(g.io.Out, "step %d  %s  after %s  %d file(s) differ from the base %.12s\n", c.Number, c.CreatedAt.Local().Format("2006-01-02 15:04:05"), terminal.Visible(c.CallID, false), len(c.Files), c.Base)
				for _, s := range c.Skipped {
					fmt.Fprintf(g.io.Out, "  not held: %s\n", terminal.Visible(s, false))
				}
			}
			last := steps[len(steps)-1].Number
			fmt.Fprintf(g.io.Out, "what a step changed: paddock sessions history %s %d %d\n", args[0], last-1, last)
			return nil
		},
	}
}

// stepsOf finds steps a and b (0 is the base: no file differs).
func stepsOf(steps []session.Step, a, b string) (session.Step, session.Step, error) {
	find := func(s string) (session.Step, error) {
		n, err := strconv.Atoi(s)
		if err == nil && n == 0 {
			return session.Step{}, nil
		}
		for _, c := range steps {
			if err == nil && c.Number == n {
				return c, nil
			}
		}
		return session.Step{}, fmt.Errorf("no step %q: the session has steps 0 (its base) to %d", s, len(steps))
	}
	x, err := find(a)
	if err != nil {
		return x, x, err
	}
	y, err := find(b)
	return x, y, err
}
