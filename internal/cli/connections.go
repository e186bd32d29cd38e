package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/terminal"
	"github.com/paddock-dev/paddock/internal/wire"
)

func newConnections(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "connections", Short: "A project's connections to the forges that hold its repositories (GitHub, GitLab, Gitea/Forgejo, a git server)"}
	var project string
	var req wire.ConnectionRequest
	add := &cobra.Command{
		Use:   "add NAME --kind KIND --url URL --repo PATTERN... [--username USER]",
		Short: "Grant a project's sessions a forge's repositories (its admins): the credential (a token or password) is read from standard input (not echoed on a terminal), kept encrypted, used by Paddock's own fetches and never shown again",
		Example: "  paddock connections add gitea --kind gitea --url https://git.example.com --repo 'team/*'\n" +
			"  paddock run --repo team/app --ref main \"fix the failing test\"",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			values, err := readSecrets(g, []string{"credential for " + req.Name})
			if err != nil {
				return err
			}
			req.Credential = values["credential for "+req.Name]
			c, err := g.remote().Projects().AddConnection(cmd.Context(), g.project(project), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "connection %s added to project %s: %s grants %s (credential kept encrypted)\n", c.Name, c.Project, c.URL, strings.Join(c.Repositories, ", "))
			fmt.Fprintf(g.io.Out, "start a session on one of them: paddock run --project %s --repo %s/OWNER/NAME \"what to do\"\n", c.Project, c.URL)
			return nil
		},
	}
	add.Flags().StringVar(&req.Kind, "kind", "", "github, gitlab, gitea (Forgejo too) or git (a plain git server over HTTPS)")
	add.Flags().StringVar(&req.URL, "url", "", "the forge's address, https://HOST[:PORT][/PREFIX] (no credential in it)")
	add.Flags().StringArrayVar(&req.Repositories, "repo", nil, "a repository it grants: OWNER/NAME, OWNER/* or * (repeat the flag for more)")
	add.Flags().StringVar(&req.Username, "username", "", "the user the credential goes with (default: the kind's token user)")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the project's connections (their credentials are never shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := g.remote().Projects().Connections(cmd.Context(), g.project(project))
			if err != nil {
				return err
			}
			return terminal.Connections(g.io.Out, g.project(project), cs)
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a connection (its project's admins): its credential is deleted; live sessions keep their copies, nothing more is fetched with it and no new session names its repositories",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.remote().Projects().RevokeConnection(cmd.Context(), g.project(project), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "connection %s of project %s revoked; its credential is deleted\n", c.Name, c.Project)
			return nil
		},
	}
	link := &cobra.Command{
		Use:   "link NAME",
		Short: "Link your own account on a connection's forge: the pull requests of what you accept on its repositories are opened as you; your token is read from standard input (not echoed on a terminal), checked with the forge, kept encrypted and never shown again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			values, err := readSecrets(g, []string{"your token on " + args[0]})
			if err != nil {
				return err
			}
			l, err := g.remote().Projects().LinkForge(cmd.Context(), g.project(project), args[0], values["your token on "+args[0]])
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "linked: pull requests of what you accept through connection %s of project %s are opened as %s on %s\n", l.Connection, l.Project, l.Login, l.URL)
			fmt.Fprintf(g.io.Out, "undo it: paddock connections unlink %s --project %s\n", l.Connection, l.Project)
			return nil
		},
	}
	unlink := &cobra.Command{
		Use:   "unlink NAME",
		Short: "Delete your link to a connection: pull requests of what you accept are opened with the connection's credential again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.remote().Projects().UnlinkForge(cmd.Context(), g.project(project), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "unlinked from connection %s of project %s; your token there is deleted\n", args[0], g.project(project))
			return nil
		},
	}
	for _, c := range []*cobra.Command{add, ls, revoke, link, unlink} {
		c.Flags().StringVar(&project, "project", "", "the project (default $PADDOCK_PROJECT, else default)")
	}
	cmd.AddCommand(add, ls, revoke, link, unlink)
	return cmd
}
