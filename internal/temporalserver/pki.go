package temporalserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"go.temporal.io/server/common/config"
)

// The embedded Temporal services speak mutual TLS, to each other and to
// every client: a certificate of the cluster's own authority is the only
// way in. Without it anyone who reaches a node's ports could start
// workflows, signal sessions or read their (encrypted) histories. The
// authority is made by the first node (kept in PostgreSQL, sealed, by the
// caller) or per process for a lone node; each node issues itself a
// certificate at start.

// ServerName is the name every node's certificate carries and every
// client checks.
const ServerName = "temporal.paddock.internal"

// NewAuthority makes a cluster's certificate authority: its certificate
// and key, PEM.
func NewAuthority() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Paddock Temporal cluster authority"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(20, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// PKI is a node's TLS material: the authority's certificate and the
// node's own certificate and key.
type PKI struct {
	caPEM, certPEM, keyPEM []byte
	pool                   *x509.CertPool
	cert                   tls.Certificate
}

// Issue gives a node at host a certificate of the authority (caCert,
// caKey: PEM), for serving and for connecting.
func Issue(caCertPEM, caKeyPEM []byte, host string) (*PKI, error) {
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("the Temporal cluster's authority: %w", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, err
	}
	if !caCert.IsCA {
		return nil, errors.New("the Temporal cluster's authority is not a certificate authority")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(5, 0, 0), // issued again at every start
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	p := &PKI{caPEM: caCertPEM, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), pool: x509.NewCertPool()}
	p.pool.AddCert(caCert)
	if p.cert, err = tls.X509KeyPair(p.certPEM, p.keyPEM); err != nil {
		return nil, err
	}
	return p, nil
}

// ClientTLS is the configuration SDK clients connect with.
func (p *PKI) ClientTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.cert}, RootCAs: p.pool, ServerName: ServerName, MinVersion: tls.VersionTLS13}
}

// rootTLS is the services' configuration: mutual TLS everywhere (none
// for a nil PKI).
func (p *PKI) rootTLS() config.RootTLS {
	if p == nil {
		return config.RootTLS{}
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	server := config.ServerTLS{CertData: b64(p.certPEM), KeyData: b64(p.keyPEM), ClientCAData: []string{b64(p.caPEM)}, RequireClientAuth: true}
	client := config.ClientTLS{ServerName: ServerName, RootCAData: []string{b64(p.caPEM)}}
	return config.RootTLS{
		Internode:    config.GroupTLS{Server: server, Client: client},
		Frontend:     config.GroupTLS{Server: server, Client: client},
		SystemWorker: config.WorkerTLS{CertData: b64(p.certPEM), KeyData: b64(p.keyPEM), Client: client},
	}
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
