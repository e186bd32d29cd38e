package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/shellcheck"
	"github.com/paddock-dev/paddock/internal/terminal"
)

// Exit statuses of `paddock policy check`, for scripts and hooks.
const (
	checkAllow = 0 // every piece is free
	checkError = 1 // the check could not be made (server unreachable, ...)
	checkUsage = 2 // bad flags or arguments, unreadable policy file
	checkAsk   = 3 // a person must approve
	checkRefus = 4 // refused: no approval can run it
)

func newPolicy(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Check commands against a policy; set a project's policy; replay a policy on past sessions"}
	cmd.AddCommand(newPolicyCheck(g), newPolicyShow(g), newPolicyApply(g), newPolicyReplay(g))
	return cmd
}

func newPolicyCheck(g *globals) *cobra.Command {
	var file, project string
	var asJSON, explain bool
	usage := func(err error) error { return &exitError{Code: checkUsage, Msg: err.Error()} }
	check := &cobra.Command{
		Use:   "check [--policy FILE | --project P] [--json] [--explain] -- COMMAND",
		Short: "Print the verdict (allow, ask or refuse) for a shell command, then why, piece by piece",
		Long: "Print the verdict for a shell command on the first line, the policy it was judged under on the second,\n" +
			"then each piece with the rule that judged it and where that rule comes from.\n\n" +
			"Policy: --policy FILE; else the project's applied policy: on the server configured (--server or\n" +
			"PADDOCK_SERVER), else in the data directory (through the server holding it); else, with no data\n" +
			"directory yet, the built-in default policy.\n\n" +
			"Exit status: 0 allow, 3 ask, 4 refuse, 2 usage error (bad flags, unreadable policy), 1 other failure\n" +
			"(e.g. the server cannot be reached).\n\n" +
			"--explain adds, for each free command involved (or, without a command, for every free command of the\n" +
			"policy), what it may do and which options keep it free.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !explain {
				return usage(fmt.Errorf("policy check: give the command after --, e.g. paddock policy check -- 'ls -la'"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p, source, err := checkPolicy(cmd, g, file, project)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				fmt.Fprintf(g.io.Out, "policy: %s\n", source)
				terminal.ExplainFree(g.io.Out, p.Commands)
				return nil
			}
			command := strings.Join(args, " ")
			raw, _ := json.Marshal(map[string]string{"command": command})
			d := p.Evaluate(policy.ShellTool, raw)
			for i := range d.Pieces {
				if strings.HasPrefix(d.Pieces[i].Source, "commands.allow ") {
					d.Pieces[i].Source += " of " + source
				}
			}
			var entries []string
			for _, piece := range d.Pieces {
				if e, ok := strings.CutPrefix(piece.Source, "commands.allow "); ok {
					if q, err := strconv.QuotedPrefix(e); err == nil {
						e, _ = strconv.Unquote(q)
						entries = append(entries, e)
					}
				}
			}
			if asJSON {
				out := map[string]any{"verdict": d.Verdict, "rule": d.Rule, "reason": d.Reason, "pieces": d.Pieces,
					"policyDigest": d.PolicyDigest, "policySource": source}
				if explain {
					out["free"] = terminal.ExplainJSON(entries)
				}
				if err := json.NewEncoder(g.io.Out).Encode(out); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(g.io.Out, d.Verdict)
				fmt.Fprintf(g.io.Out, "policy: %s (%s)\n", source, d.PolicyDigest)
				if len(d.Pieces) == 0 || d.Verdict != shellcheck.Allow && !slices.ContainsFunc(d.Pieces, func(p shellcheck.Piece) bool { return p.Verdict == d.Verdict }) {
					fmt.Fprintf(g.io.Out, "  %-6s %-24s %s\n", d.Verdict, d.Rule, d.Reason)
				}
				for _, piece := range d.Pieces {
					fmt.Fprintf(g.io.Out, "  %-6s %-24s %s: %s [%s]\n", piece.Verdict, piece.Rule, piece.Command, piece.Reason, piece.Source)
				}
				if explain {
					terminal.ExplainFree(g.io.Out, entries)
				}
			}
			switch d.Verdict {
			case shellcheck.Allow:
				return nil
			case shellcheck.Ask:
				return &exitError{Code: checkAsk}
			}
			return &exitError{Code: checkRefus}
		},
	}
	check.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	check.Flags().StringVar(&file, "policy", "", "policy YAML file (default: the project's applied policy)")
	check.Flags().StringVar(&project, "project", "", "project whose applied policy is used (without --policy; default $PADDOCK_PROJECT, else default)")
	check.Flags().BoolVar(&asJSON, "json", false, "print one JSON object with verdict, pieces and the policy's source")
	check.Flags().BoolVar(&explain, "explain", false, "say what each free command may do and which options keep it free")
	return check
}

// checkPolicy is the policy a check uses and a phrase naming it.
func checkPolicy(cmd *cobra.Command, g *globals, file, project string) (*policy.Policy, string, error) {
	if file != "" {
		p, err := loadPolicy(file)
		if err != nil {
			return nil, "", &exitError{Code: checkUsage, Msg: err.Error()}
		}
		return p, "the policy file " + file, nil
	}
	return projectPolicy(cmd, g, project)
}

// projectPolicy is a project's applied policy: on the configured server,
// else in the data directory (through the server holding it, or opened
// here); the built-in default where there is no data directory yet.
func projectPolicy(cmd *cobra.Command, g *globals, project string) (*policy.Policy, string, error) {
	project = g.project(project)
	where := g.cfg.Server
	if where == "" {
		if _, err := os.Stat(g.cfg.StoreDSN()); g.cfg.DatabaseURL == "" && err != nil {
			return policy.Default(), fmt.Sprintf("the built-in default policy (no --policy, no server configured, no data in %s)", g.cfg.DataDir), nil
		}
		where = "the local server (data in " + g.cfg.DataDir + ")"
	}
	raw, err := g.remote().Projects().Policy(cmd.Context(), project)
	if err != nil {
		return nil, "", &exitError{Code: checkError, Msg: fmt.Sprintf("reading project %s's policy from %s: %v", project, where, err)}
	}
	var out struct {
		Policy *policy.Policy `json:"policy"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Policy == nil {
		return nil, "", &exitError{Code: checkError, Msg: fmt.Sprintf("project %s's policy from %s is unreadable: %v", project, where, err)}
	}
	return out.Policy, fmt.Sprintf("project %s's applied policy on %s", project, where), nil
}

func newPolicyShow(g *globals) *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:   "show [--project P]",
		Short: "Print a project's applied policy as YAML (what its new sessions pin), with where it comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, source, err := projectPolicy(cmd, g, project)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "# %s (%s)\n", source, p.Digest())
			_, err = g.io.Out.Write(p.YAML())
			return err
		},
	}
	cmd.Flags().StringVar(&project, "project", "default", "project")
	return cmd
}

func newPolicyReplay(g *globals) *cobra.Command {
	var file, project, since string
	var asJSON bool
	var examples int
	cmd := &cobra.Command{
		Use:   "replay --policy NEW.yaml [--project P] [--since 7d] [--examples N] [--json]",
		Short: "Judge every recorded tool call of past sessions under a new policy and print what would change",
		Long: "Re-judge the tool calls recorded in the project's sessions (created within --since, e.g. 7d, 12h or a\n" +
			"date) under NEW.yaml, as the project's policy, and print every change of verdict (allow→ask, ask→refuse,\n" +
			"…) counted per transition and per rule of the new policy, with examples. Nothing is applied.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &exitError{Code: 2, Msg: "give the new policy with --policy FILE"}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return &exitError{Code: 2, Msg: err.Error()}
			}
			if _, err := policy.Parse(data); err != nil {
				return &exitError{Code: 2, Msg: fmt.Sprintf("%s: %v", file, err)}
			}
			if _, err := policy.ParseSince(since, time.Now()); err != nil {
				return &exitError{Code: 2, Msg: err.Error()}
			}
			project = g.project(project)
			rep, err := g.remote().Projects().ReplayPolicy(cmd.Context(), project, data, since, examples)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.io.Out).Encode(rep)
			}
			terminal.PrintReplay(g.io.Out, file, project, since, rep)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "policy", "", "the new policy (YAML)")
	cmd.Flags().StringVar(&project, "project", "", "project whose sessions are replayed (default $PADDOCK_PROJECT, else default)")
	cmd.Flags().StringVar(&since, "since", "", "only sessions created within this duration (7d, 12h) or since this date (default: all)")
	cmd.Flags().IntVar(&examples, "examples", 3, "examples printed per rule")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
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
