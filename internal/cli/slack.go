package cli

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/wire"
)

func newSlack(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "slack", Short: "Sessions in Slack: a project's Slack app, and your Slack account linked to you"}
	var project, approver string
	var socket bool
	var channels []string
	configure := &cobra.Command{
		Use:   "configure --team T… --channel C…=AGENT@REPO[#REF]... [--approver requester|members|USER] [--socket-mode]",
		Short: "Set the project's Slack app (its admins): a mention in a mapped channel starts a session of its agent bound to the thread; the bot token, the signing secret (and with --socket-mode the app-level token) are read from standard input, kept encrypted and never shown again",
		Example: "  paddock slack configure --project web --team T0123ABCD --channel C0456EFGH=fixer@/srv/repos/web/app\n" +
			"  (Slack app: Event Subscriptions → Request URL https://PADDOCK/v1/projects/web/slack/events; Interactivity → https://PADDOCK/v1/projects/web/slack/interactions)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := wire.SlackAppRequest{}
			req.Team, _ = cmd.Flags().GetString("team")
			for _, c := range channels {
				ch, err := chat.ParseChannel(c)
				if err != nil {
					return &exitError{Code: 2, Msg: err.Error()}
				}
				ch.Approver = approver
				req.Channels = append(req.Channels, ch)
			}
			names := []string{"bot token (xoxb-…)", "signing secret"}
			if socket {
				names = append(names, "app-level token (xapp-…)")
			}
			values, err := readSecrets(g, names)
			if err != nil {
				return err
			}
			req.BotToken, req.SigningSecret, req.AppToken = values[names[0]], values[names[1]], values["app-level token (xapp-…)"]
			a, err := g.remote().Projects().SetSlackApp(cmd.Context(), g.project(project), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "Slack app of project %s set: workspace %s, %d channel(s); its credentials are kept encrypted\n", a.Project, a.Team, len(a.Channels))
			fmt.Fprintf(g.io.Out, "in Slack, each person links their account once: mention the app, then run the `paddock slack link CODE` it gives them\n")
			return nil
		},
	}
	configure.Flags().String("team", "", "the Slack workspace's ID (T…)")
	configure.Flags().StringArrayVar(&channels, "channel", nil, "CHANNEL_ID=AGENT@REPO[#REF]: a mention there starts AGENT (empty: ad hoc) on REPO (repeat for more)")
	configure.Flags().BoolVar(&socket, "socket-mode", false, "also read an app-level token: the app's deliveries come over Socket Mode, no address Slack reaches needed")
	configure.Flags().StringVar(&approver, "approver", chat.ApproverRequester, "who decides the sessions' approvals: requester (who mentioned the app), members (any member who may approve) or a user's name")
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the project's Slack app (never its credentials)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.remote().Projects().SlackApp(cmd.Context(), g.project(project))
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "project %s: Slack workspace %s, set by %s at %s\n", a.Project, a.Team, a.CreatedBy, a.CreatedAt.Format("2006-01-02 15:04"))
			for _, c := range a.Channels {
				fmt.Fprintf(g.io.Out, "  %s → agent %s on %s (approvals: %s)\n", c.ID, cmp.Or(c.Agent, "(ad hoc)"), c.Repo, c.Approver)
			}
			return nil
		},
	}
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Remove the project's Slack app and its credentials (its admins): deliveries are refused and nothing more is posted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.remote().Projects().RemoveSlackApp(cmd.Context(), g.project(project)); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "Slack app of project %s removed\n", g.project(project))
			return nil
		},
	}
	for _, c := range []*cobra.Command{configure, show, remove} {
		c.Flags().StringVar(&project, "project", "", "the project (default $PADDOCK_PROJECT, else default)")
	}
	link := &cobra.Command{
		Use:   "link CODE",
		Short: "Link your Slack account to you, with the code the Slack app gave you: from then on what you do in Slack is done as you",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.remote().Access().LinkSlack(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "Slack user %s of workspace %s is linked to you (%s) for project %s's app; undo with: paddock slack unlink %s %s %s\n",
				l.SlackUser, l.Team, l.User, l.Project, l.Project, l.Team, l.SlackUser)
			return nil
		},
	}
	links := &cobra.Command{
		Use:   "links",
		Short: "List the Slack accounts linked to you",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ls, err := g.remote().Access().SlackLinks(cmd.Context())
			if err != nil {
				return err
			}
			if len(ls) == 0 {
				fmt.Fprintln(g.io.Out, "no Slack account is linked to you: mention a project's Slack app to get a code")
			}
			for _, l := range ls {
				fmt.Fprintf(g.io.Out, "%s %s %s (since %s)\n", l.Project, l.Team, l.SlackUser, l.CreatedAt.Format("2006-01-02"))
			}
			return nil
		},
	}
	unlink := &cobra.Command{
		Use:   "unlink PROJECT TEAM SLACK_USER",
		Short: "Unlink one of your Slack accounts: nothing it does in Slack is done as you any more",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.remote().Access().UnlinkSlack(cmd.Context(), chat.Link{Project: args[0], Team: args[1], SlackUser: args[2]}); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "Slack user %s of %s unlinked from project %s's app\n", args[2], args[1], args[0])
			return nil
		},
	}
	cmd.AddCommand(configure, show, remove, link, links, unlink)
	return cmd
}
