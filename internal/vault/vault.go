// Package vault encrypts content at rest with AES-256-GCM: Temporal's
// payloads (a session's messages, model responses and tool results pass
// through workflow history) through Codec, and the audit log's retained
// content. The key comes from configuration (PADDOCK_ENCRYPTION_KEY) or,
// when none is configured, from DATA_DIR/encryption.key, generated on first
// start with mode 0600.
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the name of the generated key in the data directory.
const KeyFile = "encryption.key"

// Key is an AES-256 key and its ID (the first 8 bytes of its SHA-256, in
// hex), which every ciphertext names so that a wrong key is reported as
// such, not as corrupt data.
type Key struct {
	ID   string
	aead cipher.AEAD
}

// ErrWrongKey is returned for data encrypted under another key.
var ErrWrongKey = errors.New("encrypted with another key")

// NewKey makes a Key from 32 bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("encryption key: %d bytes, want 32 (base64 of 32 random bytes: `head -c32 /dev/urandom | base64`)", len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return &Key{ID: hex.EncodeToString(sum[:8]), aead: aead}, nil
}

// Parse reads a key written as standard base64 (surrounding space ignored).
func Parse(s string) (*Key, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("encryption key: not base64: %w", err)
	}
	return NewKey(raw)
}

// Load returns the configured key (configured, base64) or the data
// directory's, generating it on first use.
func Load(dataDir, configured string) (*Key, error) {
	if configured != "" {
		return Parse(configured)
	}
	path := filepath.Join(dataDir, KeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("encryption key: %w", err)
		}
		if _, err := f.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n"); err != nil {
			f.Close()
			return nil, fmt.Errorf("encryption key: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("encryption key: %w", err)
		}
		return NewKey(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("encryption key %s is readable by others (mode %o): chmod 600 it", path, fi.Mode().Perm())
	}
	k, err := Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// Encrypt seals plain, bound to ad (associated data: what the ciphertext
// belongs to, so it cannot be moved to another record). The result is
// nonce || ciphertext.
func (k *Key) Encrypt(plain, ad []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return k.aead.Seal(nonce, nonce, plain, ad)
}

// Decrypt opens what Encrypt sealed with the same ad.
func (k *Key) Decrypt(sealed, ad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, errors.New("decrypt: ciphertext too short")
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], ad)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	return plain, nil
}
