// Package audit is the pure core of Paddock's tamper-evident log: entries
// chained by the SHA-256 of a canonical encoding of their predecessor,
// seals (a session's chain head signed with Ed25519 when it ends), and
// verification, which names the first entry that does not hold and why.
// An entry carries metadata and digests, never content (no instruction
// text, code or command output).
//
// What it does not do yet: write entries (the store-backed writer), keep
// the server's key, publish Merkle checkpoints, retain content or export
// to a SIEM; see ARCHITECTURE.md.
package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Entry is one record of a session's audit log.
type Entry struct {
	Session string `json:"session"`
	// Seq is the entry's place in its session's log: 1, 2, 3, … gapless.
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Project string    `json:"project"`
	// Identity is who or what acted: operator:ana, automation:RULE,
	// trigger:NAME, system:COMPONENT.
	Identity string `json:"identity"`
	Kind     string `json:"kind"`
	// Meta is what happened, as metadata (a tool's name, a verdict and its
	// rule, the policy digest, an exit code): never content.
	Meta map[string]string `json:"meta,omitempty"`
	// Digest is the SHA-256 of the content the entry stands for.
	Digest string `json:"digest,omitempty"`
	// Prev is the hash of the previous entry (Genesis for the first);
	// Hash is this entry's own, as recorded.
	Prev string `json:"prev"`
	Hash string `json:"hash"`
}

// AccessLog names the chain of access entries: logins, tokens, users,
// projects and memberships (who may do what changed, and who changed it).
// It is a log like a session's, in the same Merkle tree, never sealed.
const AccessLog = "paddock:access"

// Genesis is the Prev of a session's first entry.
func Genesis(session string) string {
	sum := sha256.Sum256([]byte("paddock-audit-v1\n" + session))
	return hex.EncodeToString(sum[:])
}

// canonical is the encoding hashed: every field but Hash, in a fixed
// order, times in UTC to the nanosecond, map keys sorted (encoding/json
// sorts them).
func (e Entry) canonical() []byte {
	b, _ := json.Marshal(struct {
		V        int               `json:"v"`
		Session  string            `json:"session"`
		Seq      int64             `json:"seq"`
		Time     string            `json:"time"`
		Project  string            `json:"project"`
		Identity string            `json:"identity"`
		Kind     string            `json:"kind"`
		Meta     map[string]string `json:"meta,omitempty"`
		Digest   string            `json:"digest,omitempty"`
		Prev     string            `json:"prev"`
	}{1, e.Session, e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Project, e.Identity, e.Kind, e.Meta, e.Digest, e.Prev})
	return b
}

// Sum is the entry's hash: the SHA-256 of its canonical encoding.
func (e Entry) Sum() string {
	sum := sha256.Sum256(e.canonical())
	return hex.EncodeToString(sum[:])
}

// Link makes e the entry after prev (nil for a session's first): its
// session, sequence number and Prev follow, and its Hash is set.
func Link(prev *Entry, e Entry) Entry {
	if prev == nil {
		e.Seq, e.Prev = 1, Genesis(e.Session)
	} else {
		e.Session, e.Seq, e.Prev = prev.Session, prev.Seq+1, prev.Hash
	}
	e.Hash = e.Sum()
	return e
}

// Digest is the SHA-256 of content, for an entry's Digest.
func Digest(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// Seal is a session's chain head signed by the server when it ended: its
// log has exactly Count entries, the last with hash Head.
type Seal struct {
	Session   string    `json:"session"`
	Count     int64     `json:"count"`
	Head      string    `json:"head"`
	Time      time.Time `json:"time"`
	Signature []byte    `json:"signature"`
}

// message is what a seal signs.
func (s Seal) message() []byte {
	return []byte("paddock-audit-seal-v1\n" + s.Session + "\n" + strconv.FormatInt(s.Count, 10) + "\n" + s.Head + "\n" +
		s.Time.UTC().Format(time.RFC3339Nano) + "\n")
}

// SealOf signs the head of a session's log (entries, in order) with key.
func SealOf(entries []Entry, key ed25519.PrivateKey, at time.Time) (Seal, error) {
	if len(entries) == 0 {
		return Seal{}, fmt.Errorf("audit: nothing to seal")
	}
	last := entries[len(entries)-1]
	s := Seal{Session: last.Session, Count: last.Seq, Head: last.Hash, Time: at.UTC()}
	s.Signature = ed25519.Sign(key, s.message())
	return s, nil
}

// Broken says where a log stops holding, and why.
type Broken struct {
	// Seq is the first entry that does not hold (0: the seal itself).
	Seq    int64
	Reason string
}

func (b *Broken) Error() string {
	if b.Seq == 0 {
		return "audit log broken at its seal: " + b.Reason
	}
	return fmt.Sprintf("audit log broken at entry %d: %s", b.Seq, b.Reason)
}

// Verify checks a session's log as stored (in order of Seq as read): each
// entry's hash is its content's, each links to the one before, none is
// missing, duplicated or out of place; and, when sealed, that the seal
// covers exactly these entries and is signed by one of pubs (the server's
// key, or one it rotated from). The error is a *Broken naming the first
// entry that does not hold.
func Verify(session string, entries []Entry, seal *Seal, pubs ...ed25519.PublicKey) error {
	prev := Genesis(session)
	for i, e := range entries {
		want := int64(i + 1)
		switch {
		case e.Session != session:
			return &Broken{want, fmt.Sprintf("it belongs to session %q", e.Session)}
		case e.Seq != want:
			return &Broken{want, fmt.Sprintf("entry %d stands in its place (one was removed, inserted or moved)", e.Seq)}
		case e.Sum() != e.Hash:
			return &Broken{want, "its content does not match its recorded hash (the entry was altered)"}
		case e.Prev != prev:
			return &Broken{want, "it does not follow the entry before it (an entry before was altered, removed or inserted)"}
		}
		prev = e.Hash
	}
	if seal == nil {
		return nil
	}
	switch {
	case seal.Session != session:
		return &Broken{0, fmt.Sprintf("it seals session %q", seal.Session)}
	case !slices.ContainsFunc(pubs, func(pub ed25519.PublicKey) bool {
		return pub != nil && ed25519.Verify(pub, seal.message(), seal.Signature)
	}):
		return &Broken{0, "its signature does not verify with the server's public key (forged, or another key)"}
	case int64(len(entries)) < seal.Count:
		return &Broken{int64(len(entries)) + 1, fmt.Sprintf("the log ends before the seal's %d entries (truncated)", seal.Count)}
	case int64(len(entries)) > seal.Count:
		return &Broken{seal.Count + 1, "an entry after the seal (a sealed log gains no entries)"}
	case seal.Count > 0 && entries[seal.Count-1].Hash != seal.Head:
		return &Broken{seal.Count, "the sealed head is not this entry's hash"}
	}
	return nil
}

// ContentAD is the associated data an entry's retained content is sealed
// with: it binds the ciphertext to the session, the entry's place and its
// digest, so it cannot be moved to another entry.
func ContentAD(e Entry) []byte {
	return []byte(fmt.Sprintf("paddock-audit-content-v1\n%s\n%d\n%s", e.Session, e.Seq, e.Digest))
}

// TreeLog names findings about the tree of every entry rather than one
// session's log.
const TreeLog = "audit-tree"
