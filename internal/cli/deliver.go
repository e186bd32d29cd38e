package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/terminal"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workspace"
)

func newDiff(g *globals) *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff ID [--stat]",
		Short: "Show a session's changes against its base commit; files under dedicated control are flagged",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := g.remote().Review().Diff(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if len(d.Files) == 0 {
				if d.Delivery != "" {
					fmt.Fprintf(g.io.Out, "session %s changed nothing since its last diff was %s (base %s)\n", args[0], d.Delivery, clip.ID(d.Base))
				} else {
					fmt.Fprintf(g.io.Out, "session %s changed nothing (base %s)\n", args[0], clip.ID(d.Base))
				}
				return nil
			}
			fmt.Fprintf(g.io.Out, "session %s against base %s (snapshot tree %s):\n", args[0], clip.ID(d.Base), d.Tree)
			terminal.PrintFiles(g.io.Out, d.Files)
			if !stat {
				fmt.Fprintf(g.io.Out, "\n%s", terminal.Visible(d.Patch, true))
			}
			if d.Delivery != "" {
				fmt.Fprintf(g.io.Out, "\n(the session's previous diff was %s; these are its changes since)\n", d.Delivery)
			}
			for _, p := range d.Skipped {
				fmt.Fprintf(g.io.Out, "⚑ left out of the diff: %s\n", terminal.Visible(p, false))
			}
			fmt.Fprintf(g.io.Out, "\naccept exactly this: paddock sessions accept %s --tree %s   |   discard it: paddock sessions reject %s\n", args[0], d.Tree, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "list the files only")
	return cmd
}

func newAccept(g *globals) *cobra.Command {
	var repo, message, tree string
	var uncommitted bool
	cmd := &cobra.Command{
		Use:   "accept ID [--tree TREE] [--repo DIR] [--uncommitted | -m MESSAGE]",
		Short: "Apply a session's diff to your repository (a commit under your git identity, or uncommitted changes); a session on a remote repository's goes to its forge as a pull request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.remote()
			d, err := c.Review().Diff(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			switch {
			case tree != "" && tree != d.Tree:
				return &exitError{Code: 1, Msg: fmt.Sprintf("session %s's working copy changed since the review (reviewed snapshot %s, now %s); nothing was applied.\nreview it again: paddock sessions diff %s", args[0], tree, d.Tree, args[0])}
			case tree == "":
				// Without a pinned snapshot, accept only while nothing can
				// change the copy between the review and now.
				if x, err := c.Sessions().Get(cmd.Context(), args[0]); err == nil && (x.Status == session.StatusRunning || x.Status == session.StatusQueued) {
					return &exitError{Code: 1, Msg: fmt.Sprintf("session %s is %s, so its copy may change between your review and this accept; nothing was applied.\n"+
						"accept exactly what you reviewed: paddock sessions accept %s --tree TREE   (TREE as printed by paddock sessions diff %s)", args[0], x.Status, args[0], args[0])}
				}
			}
			if len(d.Files) == 0 {
				what := "nothing"
				if d.Delivery != "" {
					what = "nothing since its last diff was " + d.Delivery
				}
				return &exitError{Code: 1, Msg: fmt.Sprintf("session %s changed %s: there is no diff to accept", args[0], what)}
			}
			if x, err := c.Sessions().Get(cmd.Context(), args[0]); err == nil && x.Remote != nil && repo == "" {
				return g.acceptRemote(cmd.Context(), c, x, d, uncommitted, message)
			}
			if repo == "" {
				repo = d.Repo
			}
			if repo == "" {
				return &exitError{Code: 2, Msg: "the session has no repository of origin; name yours with --repo DIR"}
			}
			if _, err := os.Stat(repo); err != nil {
				return &exitError{Code: 2, Msg: fmt.Sprintf("repository %s is not here (%v); name yours with --repo DIR", repo, err)}
			}
			mode := session.AsCommit
			if uncommitted {
				mode = session.AsUncommitted
			}
			for _, f := range d.Flagged() {
				fmt.Fprintf(g.io.Out, "⚑ %s changes %s\n", f.Path, f.Reason)
			}
			if message == "" {
				message = "Apply the changes of Paddock session " + args[0]
				if x, err := c.Sessions().Get(cmd.Context(), args[0]); err == nil && x.DisplayTitle != "" {
					message = x.DisplayTitle
				}
			}
			// The commit names the session it came from, as a trailer.
			message = strings.TrimRight(message, "\n") + "\n\nPaddock-Session: " + args[0] + "\n"
			commit, err := workspace.Apply(cmd.Context(), repo, d.Diff, mode, message)
			if err != nil {
				return err
			}
			if _, err := c.Review().Accept(cmd.Context(), args[0], wire.AcceptRequest{Mode: mode, Commit: commit, Base: d.Base, Tree: d.Tree}); err != nil {
				return fmt.Errorf("applied to %s, but recording the acceptance failed: %w", repo, err)
			}
			if commit != "" {
				fmt.Fprintf(g.io.Out, "applied %d file(s) to %s as commit %s\n", len(d.Files), repo, clip.ID(commit))
			} else {
				fmt.Fprintf(g.io.Out, "applied %d file(s) to %s as uncommitted changes\n", len(d.Files), repo)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "your repository (default: the one the session was started on)")
	cmd.Flags().BoolVar(&uncommitted, "uncommitted", false, "leave the changes uncommitted instead of committing them")
	cmd.Flags().StringVarP(&message, "message", "m", "", "commit message")
	cmd.Flags().StringVar(&tree, "tree", "", "the snapshot you reviewed (printed by sessions diff): refuse if the copy changed since")
	return cmd
}

func newReject(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "reject ID",
		Short: "Discard a session's changes; nothing reaches your repository",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Review().Reject(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "session %s's changes discarded\n", args[0])
			return nil
		},
	}
}

// acceptRemote accepts the diff of x, a session on a remote repository:
// Paddock pushes it to the forge as branch paddock/ID and opens a pull
// request (nothing is applied here). It prints where it went.
func (g *globals) acceptRemote(ctx context.Context, c *client.Client, x session.Session, d wire.DiffResponse, uncommitted bool, message string) error {
	if uncommitted || message != "" {
		return &exitError{Code: 2, Msg: fmt.Sprintf("session %s works on %s: its diff goes to the forge as a commit of its own (titled after the session) on a pull request; leave out --uncommitted and -m, or apply it here with --repo DIR", x.ID, x.Repo)}
	}
	for _, f := range d.Flagged() {
		fmt.Fprintf(g.io.Out, "⚑ %s changes %s\n", f.Path, f.Reason)
	}
	if _, err := c.Review().Accept(ctx, x.ID, wire.AcceptRequest{Mode: session.AsCommit, Base: d.Base, Tree: d.Tree}); err != nil {
		return err
	}
	where := "its forge"
	if events, err := c.Sessions().Events(ctx, x.ID, 0); err == nil {
		for _, e := range events {
			var t session.TextData
			if e.Kind == session.EventNotice && json.Unmarshal(e.Data, &t) == nil && strings.HasPrefix(t.Text, "diff accepted by ") {
				if _, rest, ok := strings.Cut(t.Text, ": "); ok {
					where = rest
				}
			}
		}
	}
	fmt.Fprintf(g.io.Out, "accepted %d file(s) of session %s: %s\n", len(d.Files), x.ID, where)
	return nil
}
