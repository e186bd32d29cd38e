package cli

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/auditexport"
	"github.com/paddock-dev/paddock/internal/terminal"
)

func newAudit(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "The tamper-evident audit log of sessions"}
	var session string
	verify := &cobra.Command{
		Use:   "verify [--session ID]",
		Short: "Verify the audit logs (one session's with --session): exit 0 when intact, 1 naming the first broken entry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reports, err := g.remote().Audit().Verify(cmd.Context(), session)
			if err != nil {
				return err
			}
			var broken []string
			entries := 0
			for _, r := range reports {
				entries += r.Entries
				switch {
				case r.OK:
				case r.SessionID == audit.TreeLog:
					broken = append(broken, "the tree of every entry: "+r.Problem)
				case r.BrokenAt == 0:
					broken = append(broken, fmt.Sprintf("session %s: %s", r.SessionID, r.Problem))
				default:
					broken = append(broken, fmt.Sprintf("session %s: entry %d: %s", r.SessionID, r.BrokenAt, r.Problem))
				}
			}
			if len(broken) > 0 {
				slices.Sort(broken)
				return &exitError{Code: 1, Msg: fmt.Sprintf("the audit log does not hold: %d problems:\n%s", len(broken), strings.Join(broken, "\n"))}
			}
			sealed := 0
			for _, r := range reports {
				if r.Sealed {
					sealed++
				}
			}
			fmt.Fprintf(g.io.Out, "audit logs intact: %d sessions (%d sealed, seals verified), %d entries\n", len(reports), sealed, entries)
			return nil
		},
	}
	verify.Flags().StringVar(&session, "session", "", "only this session's log")
	var content bool
	show := &cobra.Command{
		Use:   "show ID [--content]",
		Short: "Print a session's audit log, one entry per line (with --content, what its project retained of each)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := g.remote().Audit().Log(cmd.Context(), args[0], content)
			if err != nil {
				return err
			}
			kept := 0
			for _, e := range log {
				printEntry(g, e.Entry)
				switch {
				case e.ContentProblem != "":
					fmt.Fprintf(g.io.Out, "     content: %s\n", e.ContentProblem)
				case len(e.Content) > 0:
					kept++
					fmt.Fprintf(g.io.Out, "     content: %s\n", terminal.OneLine(string(e.Content), 400))
				}
			}
			if content && kept == 0 {
				fmt.Fprintln(g.io.Err, "no content retained for this session: its project keeps none (`paddock audit retain PROJECT 720h` keeps it from now on), or its retention is over")
			}
			return nil
		},
	}
	show.Flags().BoolVar(&content, "content", false, "also print each entry's retained content (decrypted, checked against the entry's digest)")
	access := &cobra.Command{
		Use:   "access",
		Short: "Print the access log (server administrators): logins, tokens, users, projects and members, who changed them and how they authenticated",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.remote().Audit().AccessLog(cmd.Context())
			if err != nil {
				return err
			}
			for _, e := range log {
				printEntry(g, e)
			}
			return nil
		},
	}
	key := &cobra.Command{
		Use:   "key",
		Short: "Print the server's Ed25519 public key that seals audit logs (base64), to verify seals with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := g.remote().Audit().Key(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "ed25519 %s\n", k)
			return nil
		},
	}
	var x auditexport.Exporter
	export := &cobra.Command{
		Use:   "export [--format jsonl|cef] [--since TIME] [--follow] [--output FILE | --syslog tcp://HOST:PORT]",
		Short: "Export every session's audit entries, in the order written, for a SIEM: JSON lines (each verifiable) or Common Event Format, to standard output, a file or syslog over TCP; --follow goes on with new entries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return x.Run(cmd.Context(), g.remote().Audit().Export, g.io.Out, g.io.Err)
		},
	}
	export.Flags().StringVar(&x.Format, "format", "jsonl", "jsonl or cef")
	export.Flags().StringVar(&x.Since, "since", "", "only entries written since this time (RFC 3339) or this long ago (24h)")
	export.Flags().StringVar(&x.Output, "output", "", "write to this file (mode 600; appended to when following) instead of standard output")
	export.Flags().StringVar(&x.Syslog, "syslog", "", "send each entry to this syslog server over TCP (RFC 5424, octet counting), e.g. tcp://siem.example.com:6514")
	export.Flags().BoolVar(&x.Follow, "follow", false, "keep exporting entries as they are written, reconnecting to the server and the syslog server when they drop, until interrupted")
	retain := &cobra.Command{
		Use:   "retain PROJECT [DURATION|off]",
		Short: "Show or set how long a project keeps its sessions' audit content (instructions, messages, outputs), encrypted and apart from the log; off keeps none (the default)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				d, err := g.remote().Audit().ContentRetention(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if d == "0s" {
					fmt.Fprintf(g.io.Out, "project %s keeps no audit content (only digests); `paddock audit retain %s 720h` keeps it for 30 days\n", args[0], args[0])
					return nil
				}
				fmt.Fprintf(g.io.Out, "project %s keeps audit content for %s, encrypted\n", args[0], d)
				return nil
			}
			v := args[1]
			if v == "off" {
				v = "0s"
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return &exitError{Code: 2, Msg: fmt.Sprintf("retention %q: want a duration such as 720h (30 days), or off", args[1])}
			}
			got, err := g.remote().Audit().SetContentRetention(cmd.Context(), args[0], d)
			if err != nil {
				return err
			}
			if d == 0 {
				fmt.Fprintf(g.io.Out, "project %s keeps no audit content from now on (content already kept is deleted when its retention ends)\n", args[0])
				return nil
			}
			fmt.Fprintf(g.io.Out, "project %s keeps audit content for %s from now on, encrypted; see it with `paddock audit show ID --content`\n", args[0], got)
			return nil
		},
	}
	checkpoint := &cobra.Command{
		Use:   "checkpoint",
		Short: "Print a signed checkpoint (C2SP signed note) of the Merkle tree of every audit entry: keep it to prove later that the log only grew",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cp, err := g.remote().Audit().Checkpoint(cmd.Context())
			if err != nil {
				return err
			}
			_, err = g.io.Out.Write(cp)
			return err
		},
	}
	var proveSession, older, pubKey string
	var proveSeq int64
	prove := &cobra.Command{
		Use:   "prove --session ID --seq N [--since-checkpoint FILE] [--key BASE64]",
		Short: "Prove an entry is in the log, and (with an older checkpoint) that the log only grew since; checked here with the public key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if proveSession == "" || proveSeq < 1 {
				return &exitError{Code: 2, Msg: "prove needs --session ID and --seq N (an entry of `paddock audit show ID`)"}
			}
			var old []byte
			var oldSize int64
			keyText := pubKey
			if keyText == "" {
				k, err := g.remote().Audit().Key(cmd.Context())
				if err != nil {
					return err
				}
				keyText = k
			}
			raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(keyText, "ed25519 "))
			if err != nil || len(raw) != ed25519.PublicKeySize {
				return &exitError{Code: 2, Msg: "--key: want the base64 Ed25519 key `paddock audit key` prints"}
			}
			pub := ed25519.PublicKey(raw)
			if older != "" {
				if old, err = os.ReadFile(older); err != nil {
					return err
				}
				if oldSize, _, err = audit.OpenCheckpoint(old, pub); err != nil {
					return &exitError{Code: 1, Msg: "the older checkpoint: " + err.Error()}
				}
			}
			p, err := g.remote().Audit().Prove(cmd.Context(), proveSession, proveSeq, oldSize)
			if err != nil {
				return err
			}
			e, err := p.Check(pub, old)
			if err != nil {
				return &exitError{Code: 1, Msg: "proof refused: " + err.Error()}
			}
			size, _, _ := audit.OpenCheckpoint([]byte(p.Checkpoint), pub)
			fmt.Fprintf(g.io.Out, "entry %d of session %s (%s, %s) is leaf %d of the signed log of %d entries\n", e.Seq, e.Session, e.Kind, e.Identity, p.Leaf, size)
			if old != nil {
				fmt.Fprintf(g.io.Out, "and the log of %d entries in %s is a prefix of it: it only grew\n", oldSize, older)
			}
			return nil
		},
	}
	prove.Flags().StringVar(&proveSession, "session", "", "the entry's session")
	prove.Flags().Int64Var(&proveSeq, "seq", 0, "the entry's number in its session's log")
	prove.Flags().StringVar(&older, "since-checkpoint", "", "a checkpoint kept earlier (paddock audit checkpoint > FILE)")
	prove.Flags().StringVar(&pubKey, "key", "", "the server's public key, as `paddock audit key` prints it (default: asked of the server)")
	cmd.AddCommand(verify, show, access, key, export, retain, checkpoint, prove)
	return cmd
}

// printEntry prints one audit entry on a line: its place, time, who, kind,
// metadata and the start of its hash.
func printEntry(g *globals, e audit.Entry) {
	fmt.Fprintf(g.io.Out, "%4d %s %-22s %-14s %s  %.12s\n", e.Seq, e.Time.Local().Format("15:04:05.000"), terminal.OneLine(e.Identity, 22), e.Kind,
		terminal.OneLine(strings.Join(e.MetaPairs(), " "), 400), e.Hash)
}
