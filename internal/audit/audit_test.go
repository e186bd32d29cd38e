package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

func chain(t testing.TB, n int) []Entry {
	t.Helper()
	var out []Entry
	var prev *Entry
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range n {
		e := Link(prev, Entry{Session: "s1", Project: "p", Identity: "operator:ana", Kind: "tool_call", Time: at.Add(time.Duration(i) * time.Second),
			Meta: map[string]string{"tool": "run_command", "verdict": "allow", "rule": "free:ls", "policy": "sha256:abc"}, Digest: Digest([]byte(fmt.Sprint(i)))})
		out = append(out, e)
		prev = &out[len(out)-1]
	}
	return out
}

func keys(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return pub, priv
}

// broken verifies and returns where it broke.
func broken(t *testing.T, entries []Entry, seal *Seal, pub ed25519.PublicKey) *Broken {
	t.Helper()
	err := Verify("s1", entries, seal, pub)
	var b *Broken
	require.True(t, errors.As(err, &b), "want a break, got %v", err)
	return b
}

func TestUntouchedLogVerifies(t *testing.T) {
	pub, priv := keys(t)
	log := chain(t, 10)
	require.NoError(t, Verify("s1", log, nil, nil))
	seal, err := SealOf(log, priv, time.Now())
	require.NoError(t, err)
	require.NoError(t, Verify("s1", log, &seal, pub))
	require.NoError(t, Verify("s1", nil, nil, nil), "an empty, unsealed log")
}

// TestEveryTamperingIsFoundWhereItIs: each way of changing a stored log
// fails verification at the right entry, with the reason.
func TestEveryTamperingIsFoundWhereItIs(t *testing.T) {
	pub, priv := keys(t)
	otherPub, otherPriv := keys(t)
	fresh := func() ([]Entry, Seal) {
		log := chain(t, 8)
		seal, err := SealOf(log, priv, time.Now())
		require.NoError(t, err)
		return log, seal
	}
	cases := []struct {
		name   string
		tamper func(log []Entry, seal *Seal) ([]Entry, *Seal, ed25519.PublicKey)
		seq    int64
		reason string
	}{
		{"edit a field", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l[3].Meta["verdict"] = "ask"
			return l, s, pub
		}, 4, "altered"},
		{"edit a field and its recorded hash", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l[3].Identity = "operator:mallory"
			l[3].Hash = l[3].Sum()
			return l, s, pub
		}, 5, "does not follow"},
		{"edit the time", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l[0].Time = l[0].Time.Add(time.Nanosecond)
			return l, s, pub
		}, 1, "altered"},
		{"delete an entry", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			return append(l[:2:2], l[3:]...), s, pub
		}, 3, "stands in its place"},
		{"delete and renumber", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l = append(l[:2:2], l[3:]...)
			for i := 2; i < len(l); i++ {
				l[i].Seq = int64(i + 1)
				l[i].Hash = l[i].Sum()
			}
			return l, s, pub
		}, 3, "does not follow"},
		{"swap two", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l[4], l[5] = l[5], l[4]
			return l, s, pub
		}, 5, "stands in its place"},
		{"insert one", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			forged := Link(&l[1], Entry{Kind: "decision", Identity: "operator:mallory", Time: l[1].Time})
			return append(append(l[:2:2], forged), l[2:]...), s, pub
		}, 4, "stands in its place"},
		{"truncate after sealing", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			return l[:6], s, pub
		}, 7, "truncated"},
		{"append after sealing", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			return append(l, Link(&l[len(l)-1], Entry{Kind: "late", Time: time.Now()})), s, pub
		}, 9, "after the seal"},
		{"forge a seal", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			s.Count = 6
			s.Head = l[5].Hash
			return l[:6], s, pub
		}, 0, "signature"},
		{"a seal by another key", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			other, err := SealOf(l, otherPriv, s.Time)
			require.NoError(t, err)
			return l, &other, pub
		}, 0, "signature"},
		{"replace the key and re-seal a rewritten log", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l[2].Meta["rule"] = "approved"
			for i := 2; i < len(l); i++ {
				if i > 0 {
					l[i].Prev = l[i-1].Hash
				}
				l[i].Hash = l[i].Sum()
			}
			other, err := SealOf(l, otherPriv, s.Time)
			require.NoError(t, err)
			_ = otherPub
			return l, &other, pub // the verifier holds the server's real key
		}, 0, "signature"},
		{"another session's entry", func(l []Entry, s *Seal) ([]Entry, *Seal, ed25519.PublicKey) {
			l[1].Session = "s2"
			return l, s, pub
		}, 2, "belongs to session"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, seal := fresh()
			l, s, k := c.tamper(log, &seal)
			b := broken(t, l, s, k)
			require.Equal(t, c.seq, b.Seq, b.Error())
			require.Contains(t, b.Reason, c.reason)
		})
	}
}

// BenchmarkVerify is verification throughput in bytes of log (entries as
// stored, JSON) per second.
func BenchmarkVerify(b *testing.B) {
	log := chain(b, 10000)
	size := 0
	for _, e := range log {
		size += len(e.canonical()) + 2*64
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		if err := Verify("s1", log, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLink is the cost of chaining one entry (the session path's
// share of an append).
func BenchmarkLink(b *testing.B) {
	prev := chain(b, 1)[0]
	e := Entry{Project: "p", Identity: "operator:ana", Kind: "tool_call", Time: time.Now(), Meta: map[string]string{"tool": "read_file"}, Digest: Digest([]byte("x"))}
	for range b.N {
		prev = Link(&prev, e)
	}
}

func TestExport(t *testing.T) {
	log := chain(t, 1)
	log = append(log, Link(&log[0], Entry{Project: "p", Identity: "operator:ana", Kind: "tool_call", Time: log[0].Time,
		Meta: map[string]string{"reason": "a=b|c\nd"}}))
	var b strings.Builder
	require.NoError(t, Export(&b, FormatJSONL, "1.0", log))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	var back Entry
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &back))
	require.Equal(t, log[1].Hash, back.Hash)
	require.NoError(t, Verify("s1", []Entry{mustEntry(t, lines[0]), back}, nil, nil), "an export verifies on its own")
	b.Reset()
	require.NoError(t, Export(&b, FormatCEF, "1.0", log))
	cef := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, cef, 2)
	require.True(t, strings.HasPrefix(cef[1], "CEF:0|Paddock|paddock|1.0|tool_call|tool_call|3|rt="))
	require.Contains(t, cef[1], `reason\=a\=b|c\nd`, "extension values escaped")
	require.Contains(t, cef[1], "suser=operator:ana")
	require.Error(t, Export(&b, "xml", "1.0", log))
}

func TestSyslogFrame(t *testing.T) {
	e := Entry{Time: time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)}
	frame := string(Syslog(e, "host-1", "CEF:0|Paddock|x"))
	n, body, ok := strings.Cut(frame, " ")
	require.True(t, ok)
	require.Equal(t, strconv.Itoa(len(body)), n, "octet counting: the length of what follows")
	require.Equal(t, "<86>1 2026-11-30T12:00:00.123456Z host-1 paddock - audit - CEF:0|Paddock|x", body)
	require.Contains(t, string(Syslog(e, "", "m")), " - paddock - audit - m", "no host name is the nil value")
}

func mustEntry(t *testing.T, line string) Entry {
	t.Helper()
	var e Entry
	require.NoError(t, json.Unmarshal([]byte(line), &e))
	return e
}

func TestFromEventKeepsMetadataNotContent(t *testing.T) {
	x := session.Session{ID: "s1", Project: "p", PolicyDigest: "sha256:pol", Input: "the secret plan", CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "ana"}}
	call, _ := json.Marshal(session.ToolCallData{ID: "c1", Name: "write_file", State: session.CallDone, Args: json.RawMessage(`{"path":"main.go","content":"package main // the code"}`),
		Result: "wrote 24 bytes", Verdict: "allow", Rule: "tool:write_file", By: &session.Attribution{Kind: session.ByHuman, By: "ana", Approval: "a1"}})
	e := FromEvent(x, session.Event{SessionID: "s1", Seq: 5, Kind: session.EventToolCall, Data: call})
	require.Equal(t, "human:ana", e.Identity)
	require.Equal(t, "main.go", e.Meta["path"])
	require.Equal(t, "allow", e.Meta["verdict"])
	require.Equal(t, "sha256:pol", e.Meta["policy"])
	require.Equal(t, Digest(call), e.Digest)
	for _, v := range e.Meta {
		require.NotContains(t, v, "the code")
	}
	cmd, _ := json.Marshal(session.ToolCallData{ID: "c2", Name: "run_command", State: session.CallDone, Result: "boom\n[exit status 2]"})
	require.Equal(t, "2", FromEvent(x, session.Event{SessionID: "s1", Seq: 6, Kind: session.EventToolCall, Data: cmd}).Meta["exit"])
	frame := FromEvent(x, session.Event{SessionID: "s1", Seq: 1, Kind: session.EventStatus, Data: json.RawMessage(`{"status":"queued"}`)})
	require.Equal(t, "true", frame.Meta["frame"])
	require.Equal(t, Digest([]byte("the secret plan")), frame.Meta["instruction"])
	require.Equal(t, "operator:ana", frame.Meta["createdBy"])
}
