package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func newApply(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f AGENT.yaml",
		Short: "Create or update agents from a YAML file (all documents, all or nothing)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &exitError{Code: 2, Msg: "give the spec file with -f FILE (or -f - for standard input)"}
			}
			var data []byte
			var err error
			if file == "-" {
				data, err = io.ReadAll(g.io.In)
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			res, err := g.remote().Projects().Apply(cmd.Context(), data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			for _, r := range res {
				fmt.Fprintf(g.io.Out, "agent/%s %s\n", r.Name, r.Result)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "YAML file with one or more agent specs")
	return cmd
}

func newAgents(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "List and inspect agents"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.remote().Projects().Agents(cmd.Context())
			if err != nil {
				return err
			}
			tw := table(g.io.Out)
			fmt.Fprintln(tw, "NAME\tPROJECT\tCONCURRENCY\tUPDATED")
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.Name, a.Project, a.Concurrency, a.UpdatedAt.Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:   "get NAME",
		Short: "Show an agent's spec as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.remote().Projects().Agent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(g.io.Out, a)
		},
	})
	return cmd
}
