package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/terminal"
)

func newApprovals(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Aliases: []string{"approval"}, Short: "List and decide tool calls waiting for permission"}
	var f session.ApprovalFilter
	var all bool
	ls := &cobra.Command{
		Use:   "ls [--session ID] [--all]",
		Short: "List approvals (pending ones unless --all)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !all {
				f.Status = session.ApprovalPending
			}
			list, err := g.remote().Gates().Approvals(cmd.Context(), f)
			if err != nil {
				return err
			}
			tw := table(g.io.Out)
			fmt.Fprintln(tw, "ID\tSESSION\tTOOL\tCALL\tRULE\tSTATUS\tEXPIRES")
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.SessionID, a.Tool, terminal.OneLine(terminal.ArgsText(a.Args), 50), a.Rule, a.Status, a.ExpiresAt.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	ls.Flags().StringVar(&f.SessionID, "session", "", "only this session's approvals")
	ls.Flags().BoolVar(&all, "all", false, "include decided and expired approvals")
	var note string
	decide := func(approve bool) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			a, err := g.remote().Gates().Decide(cmd.Context(), args[0], approve, note)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "approval %s %s by %s\n", a.ID, a.Status, a.DecidedBy)
			return nil
		}
	}
	approve := &cobra.Command{Use: "approve ID", Short: "Approve a call (you are recorded as the approver)", Args: cobra.ExactArgs(1), RunE: decide(true)}
	reject := &cobra.Command{Use: "reject ID [--reason TEXT]", Short: "Reject a call", Args: cobra.ExactArgs(1), RunE: decide(false)}
	for _, c := range []*cobra.Command{approve, reject} {
		c.Flags().StringVar(&note, "reason", "", "why (recorded with the decision)")
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Print an approval's whole call (every line of a command, every argument, an edit as a diff, escaped) and its analysis piece by piece",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := g.remote().Gates().Approvals(cmd.Context(), session.ApprovalFilter{})
			if err != nil {
				return err
			}
			for _, a := range list {
				if a.ID != args[0] {
					continue
				}
				fmt.Fprintf(g.io.Out, "approval %s: %s in session %s, %s\n", a.ID, terminal.Visible(a.Tool, false), a.SessionID, a.Status)
				fmt.Fprintf(g.io.Out, "why it asks: %s (%s)\n", terminal.Visible(a.Reason, false), terminal.Visible(a.Rule, false))
				fmt.Fprintf(g.io.Out, "the call:\n%s\n", terminal.CallText(a.Tool, a.Args))
				if x, err := g.remote().Sessions().Get(cmd.Context(), a.SessionID); err == nil {
					if p, err := policy.Pinned(x.Policy); err == nil {
						if text := terminal.AnalysisText(p, a.Tool, a.Args); text != "" {
							fmt.Fprintln(g.io.Out, text)
						}
					}
				}
				if a.Status == session.ApprovalPending {
					fmt.Fprintf(g.io.Out, "next: paddock approvals approve %s   |   paddock approvals reject %s --reason \"…\"\n", a.ID, a.ID)
				}
				return nil
			}
			return &exitError{Code: 1, Msg: "no approval " + args[0] + " that you may see; paddock approvals ls --all lists them"}
		},
	}
	cmd.AddCommand(ls, show, approve, reject)
	return cmd
}

func newPolicyApply(g *globals) *cobra.Command {
	var file, project string
	cmd := &cobra.Command{
		Use:   "apply -f POLICY.yaml [--project NAME]",
		Short: "Make a policy file the project's policy (new sessions pin it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := os.ReadFile(file)
			if err != nil {
				return &exitError{Code: 2, Msg: "give the policy file with -f FILE: " + err.Error()}
			}
			project = g.project(project)
			digest, err := g.remote().Projects().SetPolicy(cmd.Context(), project, data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			fmt.Fprintf(g.io.Out, "project/%s policy %s\n", project, digest)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "policy YAML file")
	cmd.Flags().StringVar(&project, "project", "", "project (default $PADDOCK_PROJECT, else default)")
	return cmd
}
