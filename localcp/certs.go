package localcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one control plane, as files in dir.
type pki struct {
	CACert, CAKey           string // the CA that signs every certificate below and that clients trust
	ServingCert, ServingKey string // kube-apiserver's serving certificate
	AdminCert, AdminKey     string // a client certificate in group system:masters
	SAKey, SAPub            string // the service-account token signing key pair
}

// certValidity is how long generated certificates are valid: long enough
// for any run, short enough that a leaked file is soon worthless.
const certValidity = 7 * 24 * time.Hour

// writePKI generates a CA, the API server's serving certificate (for
// 127.0.0.1, localhost and the service IP of "kubernetes"), an admin client
// certificate and a service-account key pair, and writes them to dir.
func writePKI(dir string, serviceIP net.IP) (*pki, error) {
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "gatewitness-localcp-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("localcp: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("localcp: parsing the CA certificate: %w", err)
	}
	if err := writeCert(p.CACert, caDER); err != nil {
		return nil, err
	}
	if err := writeKey(p.CAKey, caKey); err != nil {
		return nil, err
	}

	leaf := func(certPath, keyPath string, tmpl *x509.Certificate) error {
		key, err := newKey()
		if err != nil {
			return err
		}
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(certValidity)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := sign(tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("localcp: certificate %s: %w", filepath.Base(certPath), err)
		}
		if err := writeCert(certPath, der); err != nil {
			return err
		}
		return writeKey(keyPath, key)
	}
	if err := leaf(p.ServingCert, p.ServingKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), serviceIP},
	}); err != nil {
		return nil, err
	}
	if err := leaf(p.AdminCert, p.AdminKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "gatewitness-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	if err := writeKey(p.SAKey, saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("localcp: encoding the service-account public key: %w", err)
	}
	if err := writePEM(p.SAPub, "PUBLIC KEY", pub, 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("localcp: generating a key: %w", err)
	}
	return k, nil
}

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, priv *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
}

func writeCert(path string, der []byte) error {
	return writePEM(path, "CERTIFICATE", der, 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("localcp: encoding %s: %w", filepath.Base(path), err)
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("localcp: writing %s: %w", path, err)
	}
	return nil
}
