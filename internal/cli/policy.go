package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/policy"
)

func newPolicy(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Check commands against a policy; set a project's policy"}
	var file string
	var asJSON bool
	check := &cobra.Command{
		Use:   "check [--policy FILE] [--json] -- COMMAND",
		Short: "Print the verdict (allow, ask or refuse) for a shell command, then why, piece by piece",
		Long: "Print the verdict for a shell command on the first line, then each piece with the rule that judged it.\n" +
			"Without --policy the default policy applies (every tool asks; read-only commands such as ls, cat, git status are free).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadPolicy(file)
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			command := strings.Join(args, " ")
			raw, _ := json.Marshal(map[string]string{"command": command})
			d := p.Evaluate(policy.ShellTool, raw)
			if asJSON {
				return json.NewEncoder(g.io.Out).Encode(map[string]any{
					"verdict": d.Verdict, "rule": d.Rule, "reason": d.Reason, "pieces": d.Pieces, "policyDigest": d.PolicyDigest,
				})
			}
			fmt.Fprintln(g.io.Out, d.Verdict)
			for _, piece := range d.Pieces {
				fmt.Fprintf(g.io.Out, "  %-6s %-24s %s: %s\n", piece.Verdict, piece.Rule, piece.Command, piece.Reason)
			}
			return nil
		},
	}
	check.Flags().StringVar(&file, "policy", "", "policy YAML file (default: the built-in default policy)")
	check.Flags().BoolVar(&asJSON, "json", false, "print one JSON object with verdict and pieces")
	cmd.AddCommand(check, newPolicyApply(g))
	return cmd
}

// loadPolicy reads a policy file; no file means the default policy.
func loadPolicy(file string) (*policy.Policy, error) {
	if file == "" {
		return policy.Default(), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}
