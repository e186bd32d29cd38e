package app

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/paddock-dev/paddock/internal/temporalserver"
	"github.com/paddock-dev/paddock/internal/vault"
)

// auditKey is the server's Ed25519 key that seals audit logs: generated
// on first start into DATA_DIR/audit.key (PKCS #8, PEM, mode 0600), read
// on every later one; a key file others may read is refused.
func auditKey(dataDir string) (ed25519.PrivateKey, error) {
	path := filepath.Join(dataDir, "audit.key")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit key: %w", err)
		}
		if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
			f.Close()
			return nil, fmt.Errorf("audit key: %w", err)
		}
		return key, f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit key %s is readable by others (mode %o): chmod 600 it", path, fi.Mode().Perm())
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("audit key %s: not a PEM file", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("audit key %s: not an Ed25519 key", path)
	}
	return key, nil
}

// sharedAuditKey is the audit signing key of a server on PostgreSQL: kept
// in the database, sealed with the content key, so that every node (and a
// node started afresh) signs and verifies with the same one. The first
// node's wins; it is this node's DATA_DIR/audit.key when there is one (a
// server moved from SQLite keeps verifying its old seals).
func sharedAuditKey(ctx context.Context, st secrets, key *vault.Key, dataDir string) (ed25519.PrivateKey, error) {
	var fresh ed25519.PrivateKey
	if _, err := os.Stat(filepath.Join(dataDir, "audit.key")); err == nil {
		if fresh, err = auditKey(dataDir); err != nil {
			return nil, err
		}
	} else if _, fresh, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return nil, err
	}
	seed, err := sharedSecret(ctx, st, key, "audit", fresh.Seed())
	if err != nil {
		return nil, err
	}
	if len(seed) != ed25519.SeedSize {
		return nil, errors.New("the audit signing key kept in the database is not an Ed25519 seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// secrets is where the nodes of a PostgreSQL server keep what they share.
type secrets interface {
	ServerSecret(ctx context.Context, name string, fresh []byte) ([]byte, error)
}

// sharedSecret is the secret every node of a PostgreSQL server shares
// under name: the first node's fresh one, kept in the database sealed with
// the content key.
func sharedSecret(ctx context.Context, st secrets, key *vault.Key, name string, fresh []byte) ([]byte, error) {
	ad := []byte("server-secret/" + name)
	stored, err := st.ServerSecret(ctx, name, key.Encrypt(fresh, ad))
	if err != nil {
		return nil, err
	}
	secret, err := key.Decrypt(stored, ad)
	if err != nil {
		return nil, fmt.Errorf("the %s secret kept in the database does not open with this node's content key: every node needs the same PADDOCK_ENCRYPTION_KEY", name)
	}
	return secret, nil
}

// webKey is the web app's key for forms and login cookies, shared by the
// nodes of a PostgreSQL server.
func webKey(ctx context.Context, st secrets, key *vault.Key) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	secret, err := sharedSecret(ctx, st, key, "web", fresh)
	if err == nil && len(secret) != 32 {
		err = errors.New("the web secret kept in the database is not 32 bytes")
	}
	return secret, err
}

// temporalPKI is this node's TLS material for the embedded Temporal
// services: a certificate for host issued by the cluster's authority,
// which the nodes of a PostgreSQL server share (st non-nil) and a lone
// node makes for itself at each start.
func temporalPKI(ctx context.Context, st secrets, key *vault.Key, host string) (*temporalserver.PKI, error) {
	certPEM, keyPEM, err := temporalserver.NewAuthority()
	if err != nil {
		return nil, err
	}
	if st != nil {
		if certPEM, keyPEM, err = authority(ctx, st, key, "temporal-ca"); err != nil {
			return nil, err
		}
	}
	return temporalserver.Issue(certPEM, keyPEM, host)
}

// authority is the certificate authority kept (sealed) as the server's
// secret name, made by the first node that needs it.
func authority(ctx context.Context, st secrets, key *vault.Key, name string) (certPEM, keyPEM []byte, err error) {
	certPEM, keyPEM, err = temporalserver.NewAuthority()
	if err != nil {
		return nil, nil, err
	}
	both, err := sharedSecret(ctx, st, key, name, append(certPEM, keyPEM...))
	if err != nil {
		return nil, nil, err
	}
	certPEM, keyPEM = nil, nil
	for rest := both; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			certPEM = pem.EncodeToMemory(b)
		} else {
			keyPEM = pem.EncodeToMemory(b)
		}
	}
	return certPEM, keyPEM, nil
}
