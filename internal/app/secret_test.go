package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Planted credentials, stored reversed and turned around at run time: the
// data directory holds a link to this test binary (the egress forwarder),
// which must not hold them in clear text either.
var (
	plantedAWS    = reverse("TRPW2MKXL5JV3Q7ZAIKA")
	plantedGitHub = reverse("iUeQa0Sj4Hg6Fd1Yc7Wb3Nv8XmL2qKz9Pt5R_phg")
	pemBody       = reverse("0qrnRLno7wLTVnug0tAff6VzeLegRt0mNzPeEOgl4oM2HxMzoCHPLVfL1US1uAEQACKAABIwoEIIM")
	plantedPEM    = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + pemBody + "/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf\n-----END RSA " + "PRIVATE KEY-----"
)

func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// TestPlantedSecretsAreNowhereInTheDataDirectory: a model (an OpenAI-wire
// server driven through the official SDK) writes a GitHub token in its
// message (across the 512 bytes where streamed text is cut into events)
// and runs a command whose output holds an AWS key and a PEM
// private key (the command itself holds neither: it decodes them). The
// transcript shows them redacted with their rules, the model is not sent
// them back, and after the server stops no file under its data directory
// (the store, the embedded Temporal database, their WAL files, working
// copies and volumes) holds any of them in clear text.
func TestPlantedSecretsAreNowhereInTheDataDirectory(t *testing.T) {
	ctx := context.Background()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	command := "printf %s " + b64("aws_access_key_id = "+plantedAWS+"\n") + " | base64 -d; printf %s " + b64(plantedPEM+"\n") + " | base64 -d"
	args, _ := json.Marshal(map[string]string{"command": command})
	srv := providertest.NewServer(t, "",
		providertest.Reply{SSE: providertest.OpenAIStream(strings.Repeat("reading ", 61)+"found the deploy token "+plantedGitHub+" in the notes; checking the keys.",
			providertest.Call{ID: "call_1", Name: "run_command", Args: string(args)})},
		providertest.Reply{SSE: providertest.OpenAIStream("Done: the keys are in the output.")})
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", srv.URL)

	dir := dataDir(t)
	child, c := serveChild(t, dir)
	_, err := c.Projects().SetPolicy(ctx, "default", []byte("default: allow\ncommands:\n  allow: [printf, base64]\n"))
	require.NoError(t, err)
	_, err = c.Projects().Apply(ctx, []byte("name: leaky\nmodel: openai/gpt-test\ntools: [run_command]\n"))
	require.NoError(t, err)
	x, err := c.Sessions().Create(ctx, wire.CreateRequest{Agent: "leaky", Repo: gitRepo(t), Message: "look at the notes"})
	require.NoError(t, err)
	waitFor(t, "the turn to end", func() (bool, error) {
		s, err := c.Sessions().Get(ctx, x.ID)
		if s.Status == session.StatusAwaiting || s.Status == session.StatusFailed {
			return true, err
		}
		aps, _ := c.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID})
		for _, ap := range aps {
			if ap.Status == session.ApprovalPending {
				_, err = c.Gates().Decide(ctx, ap.ID, true, "")
			}
		}
		return false, err
	})

	events, err := c.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	var all bytes.Buffer
	for _, e := range events {
		all.Write(e.Data)
		all.WriteByte('\n')
	}
	transcript := all.String()
	for _, marker := range []string{"[REDACTED:github-pat]", "[REDACTED:aws-access-token]", "[REDACTED:private-key]"} {
		require.Contains(t, transcript, marker, "the transcript shows each secret redacted with its rule")
	}
	// A piece of each is enough to count as a leak (streamed text is
	// cut into events; a key cut in two would match no rule).
	needles := []string{plantedAWS[4:], plantedGitHub[4:20], pemBody}
	for _, s := range needles {
		require.NotContains(t, transcript, s)
	}
	require.Len(t, srv.Requests, 2)
	second, _ := json.Marshal(srv.Requests[1])
	require.NotContains(t, string(second), plantedAWS[4:], "the model is not sent a secret from a tool's output")
	require.Contains(t, string(second), "[REDACTED:aws-access-token]")

	require.NoError(t, child.Process.Signal(syscall.SIGTERM))
	_ = child.Wait()
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		for _, n := range scanFile(t, p, needles) {
			t.Errorf("%s holds %.12s… in clear text", strings.TrimPrefix(p, dir), n)
		}
		return nil
	}))
	require.Greater(t, files, 3)
}

// scanFile returns the needles found in the file at p, reading only its
// data (a session's volume is a sparse image of gigabytes, mostly holes).
func scanFile(t *testing.T, p string, needles []string) []string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	overlap := 0
	for _, n := range needles {
		overlap = max(overlap, len(n)-1)
	}
	found := map[string]bool{}
	buf := make([]byte, 1<<20)
	var tail []byte
	for off := int64(0); ; {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil {
			break // no data past off (ENXIO)
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		require.NoError(t, err)
		if data != off {
			tail = nil // a hole separates the extents
		}
		for pos := data; pos < hole; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), hole-pos)], pos)
			if n == 0 {
				require.NoError(t, err)
			}
			window := append(tail, buf[:n]...)
			for _, s := range needles {
				if bytes.Contains(window, []byte(s)) {
					found[s] = true
				}
			}
			tail = append([]byte(nil), window[max(0, len(window)-overlap):]...)
			pos += int64(n)
		}
		off = hole
	}
	var out []string
	for _, s := range needles {
		if found[s] {
			out = append(out, s)
		}
	}
	return out
}
