package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A witness (c2sp.org/tlog-witness) cosigns each checkpoint it is shown
// once it has checked that the log only grew since the last one it
// cosigned: anyone holding a cosigned checkpoint knows the witness saw
// that history, and a log rewritten since cannot get it cosigned again.

// Witness is one witness: where to submit checkpoints, and the key its
// cosignatures (c2sp.org/tlog-cosignature, cosignature/v1) verify with.
type Witness struct {
	URL      string
	Verifier note.Verifier
}

// ParseWitness reads "URL=VKEY": the witness's address and its verifier
// key (NAME+HASH+BASE64 of 0x04 and its Ed25519 public key).
func ParseWitness(spec string) (Witness, error) {
	u, vkey, ok := strings.Cut(spec, "=")
	if !ok || !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return Witness{}, fmt.Errorf("witness %q: want URL=VERIFIER-KEY", spec)
	}
	v, err := NewCosignatureVerifier(vkey)
	if err != nil {
		return Witness{}, fmt.Errorf("witness %s: %w", u, err)
	}
	return Witness{URL: strings.TrimSuffix(u, "/"), Verifier: v}, nil
}

// algCosignatureV1 is the signed-note algorithm of cosignatures.
const algCosignatureV1 = 4

// NewCosignatureVerifier is the verifier of a witness's cosignatures from
// its verifier key.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	parts := strings.SplitN(vkey, "+", 3) // the key's base64 may hold a plus
	if len(parts) != 3 || parts[0] == "" || len(parts[1]) != 8 {
		return nil, errors.New("verifier key: want NAME+HASH+KEY")
	}
	hash, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil {
		return nil, errors.New("verifier key: its hash is not hexadecimal")
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, errors.New("verifier key: not a cosignature/v1 Ed25519 key")
	}
	if uint32(hash) != keyHash(parts[0], ed25519.PublicKey(key[1:]), algCosignatureV1) {
		return nil, errors.New("verifier key: its hash does not match its name and key")
	}
	return cosignatureVerifier{name: parts[0], hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v cosignatureVerifier) Name() string    { return v.name }
func (v cosignatureVerifier) KeyHash() uint32 { return v.hash }

// Verify checks a cosignature: the time it was made, then the Ed25519
// signature over "cosignature/v1", that time and the checkpoint.
func (v cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	m := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", t, msg)
	return ed25519.Verify(v.key, m, sig[8:])
}

// ErrWitnessRefused is a witness's refusal of a checkpoint that does not
// extend the last one it cosigned (a rewritten or truncated log).
var ErrWitnessRefused = errors.New("the witness refused the checkpoint")

// WitnessConflict says the witness's last cosigned size is not the one
// submitted as the old size: resubmit from Size.
type WitnessConflict struct{ Size int64 }

func (e *WitnessConflict) Error() string {
	return fmt.Sprintf("the witness last cosigned a log of %d entries", e.Size)
}

// Cosign submits signed (a checkpoint) to w with a proof that it extends
// the log of oldSize entries the witness cosigned last, and returns the
// witness's cosignature lines, to append to the note.
func (w Witness) Cosign(ctx context.Context, hc *http.Client, signed []byte, oldSize int64, proof []tlog.Hash) ([]byte, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", oldSize)
	for _, h := range proof {
		fmt.Fprintf(&body, "%s\n", base64.StdEncoding.EncodeToString(h[:]))
	}
	body.WriteString("\n")
	body.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/add-checkpoint", &body)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", w.URL, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("witness %s: a conflict without its size: %q", w.URL, out)
		}
		return nil, &WitnessConflict{Size: n}
	case http.StatusUnprocessableEntity:
		return nil, fmt.Errorf("witness %s: %w: the log does not extend the one it cosigned last", w.URL, ErrWitnessRefused)
	default:
		return nil, fmt.Errorf("witness %s: %s: %s", w.URL, resp.Status, bytes.TrimSpace(out))
	}
	// The answer is signature lines; only this witness's that verify are
	// kept.
	n, err := note.Open(append(append([]byte{}, signed...), out...), note.VerifierList(w.Verifier))
	if err != nil || len(n.Sigs) == 0 {
		return nil, fmt.Errorf("witness %s: its cosignature does not verify with its key: %v", w.URL, err)
	}
	var lines bytes.Buffer
	for _, s := range n.Sigs {
		fmt.Fprintf(&lines, "— %s %s\n", s.Name, s.Base64)
	}
	return lines.Bytes(), nil
}
