package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/wire"
)

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func newWhoami(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Print who the server takes you for, and your projects and roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := g.remote().Access().Whoami(cmd.Context())
			if err != nil {
				return err
			}
			admin := ""
			if w.Admin {
				admin = " (server administrator)"
			}
			fmt.Fprintf(g.io.Out, "%s%s, authenticated by %s\n", w.User, admin, w.Via)
			for _, m := range w.Projects {
				fmt.Fprintf(g.io.Out, "  %s: %s\n", m.Project, m.Role)
			}
			return nil
		},
	}
}

func newProjects(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "projects", Short: "Projects: where sessions, agents and policies live, and who may do what there"}
	cmd.AddCommand(&cobra.Command{
		Use:   "create NAME",
		Short: "Create a project (server administrators); then `paddock members add NAME USER --role ROLE`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.remote().Access().CreateProject(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "project %s created; give it members with `paddock members add %s USER --role member`\n", args[0], args[0])
			return nil
		},
	}, &cobra.Command{
		Use:   "credentials PROJECT NAME...",
		Short: "Set the project's service credentials (its admins): each value is read from standard input, one line each (not echoed on a terminal); agents with identity: service (or a requester who chooses it) give them to their commands",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			values, err := readSecrets(g, args[1:])
			if err != nil {
				return err
			}
			if err := g.remote().Gates().SetProjectCredentials(cmd.Context(), args[0], values); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "project %s: service credentials %s set (kept encrypted; names in the access log, values nowhere)\n", args[0], strings.Join(args[1:], ", "))
			return nil
		},
	}, &cobra.Command{
		Use:   "ls",
		Short: "List your projects and your role in each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ms, err := g.remote().Access().Projects(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROJECT\tYOUR ROLE")
			for _, m := range ms {
				fmt.Fprintf(tw, "%s\t%s\n", m.Project, m.Role)
			}
			return tw.Flush()
		},
	})
	return cmd
}

func newMembers(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "members", Short: "A project's members and their roles (admin, member, auditor, viewer, guest)"}
	var role string
	add := &cobra.Command{
		Use:   "add PROJECT USER --role ROLE",
		Short: "Give USER a role in PROJECT (replacing any other): admin (everything), member (start, steer, approve), auditor (read, audit), viewer (read), guest (read, start)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := identity.ParseRole(role)
			if err != nil {
				return &exitError{Code: 2, Msg: "--role: " + err.Error()}
			}
			if err := g.remote().Access().SetMember(cmd.Context(), args[0], args[1], r); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "%s is %s in %s\n", args[1], r, args[0])
			return nil
		},
	}
	add.Flags().StringVar(&role, "role", "", "admin, member, auditor, viewer or guest")
	_ = add.MarkFlagRequired("role")
	cmd.AddCommand(add, &cobra.Command{
		Use:   "rm PROJECT USER",
		Short: "Take USER's role in PROJECT away",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.remote().Access().RemoveMember(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "%s is no longer a member of %s\n", args[1], args[0])
			return nil
		},
	}, &cobra.Command{
		Use:   "ls PROJECT",
		Short: "List PROJECT's members",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ms, err := g.remote().Access().Members(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tROLE")
			for _, m := range ms {
				fmt.Fprintf(tw, "%s\t%s\n", m.User, m.Role)
			}
			return tw.Flush()
		},
	})
	return cmd
}

func newUsers(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Users (server administrators)"}
	var admin bool
	create := &cobra.Command{
		Use:   "create NAME [--admin]",
		Short: "Create a user; then `paddock tokens create --user NAME` and `paddock members add PROJECT NAME --role ROLE`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := g.remote().Access().CreateUser(cmd.Context(), args[0], admin); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "user %s created; give them a token with `paddock tokens create --user %s` and a role with `paddock members add PROJECT %s --role member`\n", args[0], args[0], args[0])
			return nil
		},
	}
	create.Flags().BoolVar(&admin, "admin", false, "a server administrator (manages users, projects and every project)")
	cmd.AddCommand(create, &cobra.Command{
		Use:   "ls",
		Short: "List users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			us, err := g.remote().Access().Users(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USER\tADMIN\tDIRECTORY\tCREATED\tREVOKED")
			for _, u := range us {
				dir := "-"
				if u.Issuer != "" {
					dir = u.Issuer
				}
				fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\n", u.Name, u.Admin, dir, when(&u.CreatedAt), when(u.RevokedAt))
			}
			return tw.Flush()
		},
	})
	return cmd
}

func newTokens(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "tokens", Short: "API tokens (random, shown once, stored as a hash)"}
	var user, label, expires string
	var quiet, all bool
	create := &cobra.Command{
		Use:   "create [--user NAME] [--label TEXT] [--expires 720h] [--quiet]",
		Short: "Mint a token for yourself, or for --user (server administrators); it is printed once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := g.remote().Access().CreateToken(cmd.Context(), wire.NewToken{User: user, Label: label, Expires: expires})
			if err != nil {
				return err
			}
			if quiet {
				fmt.Fprintln(g.io.Out, t.Secret)
				return nil
			}
			fmt.Fprintf(g.io.Out, "token %s for %s, expires %s; shown this once:\n%s\nuse it with: export PADDOCK_TOKEN=%s\n", t.ID, t.User, when(t.ExpiresAt), t.Secret, t.Secret)
			return nil
		},
	}
	create.Flags().StringVar(&user, "user", "", "whose token (default: yours)")
	create.Flags().StringVar(&label, "label", "", "what it is for")
	create.Flags().StringVar(&expires, "expires", "", "lifetime (default 720h, at most 8784h)")
	create.Flags().BoolVar(&quiet, "quiet", false, "print only the token")
	ls := &cobra.Command{
		Use:   "ls [--user NAME | --all]",
		Short: "List tokens (yours by default): ID, label, expiry, last use, revocation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := g.remote().Access().Tokens(cmd.Context(), user, all)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tLABEL\tEXPIRES\tLAST USED\tREVOKED")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.User, t.Label, when(t.ExpiresAt), when(t.LastUsed), when(t.RevokedAt))
			}
			return tw.Flush()
		},
	}
	ls.Flags().StringVar(&user, "user", "", "this user's (server administrators)")
	ls.Flags().BoolVar(&all, "all", false, "everyone's (server administrators)")
	cmd.AddCommand(create, ls, &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token (yours, or anyone's for an administrator): it stops working on its next use",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if tid, _, err := identity.ParseToken(id); err == nil {
				id = tid // the whole token given: revoke it by its ID
			}
			if err := g.remote().Access().RevokeToken(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "token %s revoked\n", id)
			return nil
		},
	})
	return cmd
}

func newAdmin(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "admin", Short: "Administration: revocation"}
	var user, id string
	revoke := &cobra.Command{
		Use:   "revoke --user NAME | --session ID",
		Short: "Revoke a user (their tokens stop working, their live sessions are stopped) or one session (stopped now); recorded with your name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case (user == "") == (id == ""):
				return &exitError{Code: 2, Msg: "give one of --user NAME or --session ID"}
			case id != "":
				sent := time.Now()
				if err := g.remote().Sessions().Revoke(cmd.Context(), id); err != nil {
					return err
				}
				fmt.Fprintf(g.io.Out, "session %s revoked\n", id)
				return awaitStopped(cmd.Context(), g, id, sent)
			}
			r, err := g.remote().Access().RevokeUser(cmd.Context(), user)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "user %s revoked: their tokens no longer work", user)
			if len(r.Stopped) > 0 {
				fmt.Fprintf(g.io.Out, "; sessions stopped: %s", strings.Join(r.Stopped, ", "))
			}
			fmt.Fprintln(g.io.Out)
			for _, p := range r.Problems {
				fmt.Fprintln(g.io.Err, "not stopped:", p)
			}
			if len(r.Problems) > 0 {
				return &exitError{Code: 1, Msg: fmt.Sprintf("%d of the user's sessions could not be stopped", len(r.Problems))}
			}
			return nil
		},
	}
	revoke.Flags().StringVar(&user, "user", "", "the user to revoke")
	revoke.Flags().StringVar(&id, "session", "", "the session to revoke")
	cmd.AddCommand(revoke)
	return cmd
}
