package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
)

func key(t *testing.T, b byte) *Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEncryptDecrypt(t *testing.T) {
	k, other := key(t, 1), key(t, 2)
	sealed := k.Encrypt([]byte("the instruction"), []byte("entry 7"))
	if bytes.Contains(sealed, []byte("instruction")) {
		t.Fatal("ciphertext holds the plain text")
	}
	if got, err := k.Decrypt(sealed, []byte("entry 7")); err != nil || string(got) != "the instruction" {
		t.Fatalf("round trip: %q %v", got, err)
	}
	if _, err := k.Decrypt(sealed, []byte("entry 8")); err == nil {
		t.Error("opened under other associated data")
	}
	if _, err := other.Decrypt(sealed, []byte("entry 7")); err == nil {
		t.Error("opened with another key")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := k.Decrypt(sealed, []byte("entry 7")); err == nil {
		t.Error("opened a modified ciphertext")
	}
	if _, err := k.Decrypt([]byte("short"), nil); err == nil {
		t.Error("opened a truncated ciphertext")
	}
}

func TestCodec(t *testing.T) {
	dc := Codec{Key: key(t, 1)}.DataConverter()
	p, err := dc.ToPayload(map[string]string{"output": "a secret output"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(p.GetData(), []byte("secret output")) || string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
		t.Fatalf("payload not encrypted: %v", p)
	}
	var back map[string]string
	if err := dc.FromPayload(p, &back); err != nil || back["output"] != "a secret output" {
		t.Fatalf("decode: %v %v", back, err)
	}
	// History written before encryption was enabled still decodes.
	plain, _ := converter.GetDefaultDataConverter().ToPayload("old")
	var s string
	if err := dc.FromPayload(plain, &s); err != nil || s != "old" {
		t.Fatalf("plain payload: %q %v", s, err)
	}
	// Another key is named as such.
	err = Codec{Key: key(t, 2)}.DataConverter().FromPayload(p, &back)
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "PADDOCK_ENCRYPTION_KEY") {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	k, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	again, err := Load(dir, "")
	if err != nil || again.ID != k.ID {
		t.Fatalf("reloaded key %v differs: %v", again, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, KeyFile))
	if configured, err := Load(t.TempDir(), string(data)); err != nil || configured.ID != k.ID {
		t.Fatalf("configured key: %v %v", configured, err)
	}
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, ""); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key accepted: %v", err)
	}
	for _, bad := range []string{"not base64!", "c2hvcnQ="} {
		if _, err := Load(dir, bad); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}
