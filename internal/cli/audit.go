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
)

func newAudit(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "The tamper-evident audit log of sessions"}
	var session string
	verify := &cobra.Command{
		Use:   "verify [--session ID]",
		Short: "Verify the audit logs (one session's with --session): exit 0 when intact, 1 naming the first broken entry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reports, err := g.remote().VerifyAudit(cmd.Context(), session)
			if err != nil {
				return err
			}
			var broken []string
			entries := 0
			for _, r := range reports {
				entries += r.Entries
				if !r.OK {
					broken = append(broken, fmt.Sprintf("session %s: entry %d: %s", r.SessionID, r.BrokenAt, r.Problem))
				}
			}
			if len(broken) > 0 {
				slices.Sort(broken)
				return &exitError{code: 1, msg: fmt.Sprintf("audit log broken in %d of %d sessions:\n%s", len(broken), len(reports), strings.Join(broken, "\n"))}
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
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's audit log, one entry per line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := g.remote().AuditLog(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			for _, e := range log {
				keys := make([]string, 0, len(e.Meta))
				for k := range e.Meta {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				var meta []string
				for _, k := range keys {
					meta = append(meta, k+"="+e.Meta[k])
				}
				fmt.Fprintf(g.io.Out, "%4d %s %-22s %-14s %s  %.12s\n", e.Seq, e.Time.Local().Format("15:04:05.000"), oneLine(e.Identity, 22), e.Kind,
					oneLine(strings.Join(meta, " "), 160), e.Hash)
			}
			return nil
		},
	}
	key := &cobra.Command{
		Use:   "key",
		Short: "Print the server's Ed25519 public key that seals audit logs (base64), to verify seals with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := g.remote().AuditKey(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(g.io.Out, "ed25519 %s\n", k)
			return nil
		},
	}
	var format, since, output string
	export := &cobra.Command{
		Use:   "export [--format jsonl|cef] [--since TIME] [--output FILE]",
		Short: "Export every session's audit entries, in the order written, for a SIEM: JSON lines (each verifiable) or Common Event Format",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var from time.Time
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					d, derr := time.ParseDuration(since)
					if derr != nil || d <= 0 {
						return &exitError{code: 2, msg: fmt.Sprintf("--since %q: want an RFC 3339 time (2026-11-30T12:00:00Z) or a duration back from now (24h)", since)}
					}
					t = time.Now().Add(-d)
				}
				from = t
			}
			w := g.io.Out
			if output != "" {
				f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			return g.remote().ExportAudit(cmd.Context(), w, format, from)
		},
	}
	export.Flags().StringVar(&format, "format", "jsonl", "jsonl or cef")
	export.Flags().StringVar(&since, "since", "", "only entries written since this time (RFC 3339) or this long ago (24h)")
	export.Flags().StringVar(&output, "output", "", "write to this file (mode 600) instead of standard output")
	checkpoint := &cobra.Command{
		Use:   "checkpoint",
		Short: "Print a signed checkpoint (C2SP signed note) of the Merkle tree of every audit entry: keep it to prove later that the log only grew",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cp, err := g.remote().Checkpoint(cmd.Context())
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
				return &exitError{code: 2, msg: "prove needs --session ID and --seq N (an entry of `paddock audit show ID`)"}
			}
			var old []byte
			var oldSize int64
			keyText := pubKey
			if keyText == "" {
				k, err := g.remote().AuditKey(cmd.Context())
				if err != nil {
					return err
				}
				keyText = k
			}
			raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(keyText, "ed25519 "))
			if err != nil || len(raw) != ed25519.PublicKeySize {
				return &exitError{code: 2, msg: "--key: want the base64 Ed25519 key `paddock audit key` prints"}
			}
			pub := ed25519.PublicKey(raw)
			if older != "" {
				if old, err = os.ReadFile(older); err != nil {
					return err
				}
				if oldSize, _, err = audit.OpenCheckpoint(old, pub); err != nil {
					return &exitError{code: 1, msg: "the older checkpoint: " + err.Error()}
				}
			}
			p, err := g.remote().Prove(cmd.Context(), proveSession, proveSeq, oldSize)
			if err != nil {
				return err
			}
			e, err := p.Check(pub, old)
			if err != nil {
				return &exitError{code: 1, msg: "proof refused: " + err.Error()}
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
	cmd.AddCommand(verify, show, key, export, checkpoint, prove)
	return cmd
}
