package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowsnap/flowsnap/opscli"
	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 named cn to
// certPath and its key to keyPath, and returns the certificate.
func selfSigned(t *testing.T, cn, certPath, keyPath string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// The key first, then the certificate, each replaced whole, as a
	// renewal tool does.
	replace := func(path string, block *pem.Block) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	replace(keyPath, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	replace(certPath, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestTLSServesHTTP2AndTakesUpAReplacedCertificate(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := selfSigned(t, "first", certPath, keyPath)
	addr, out, _ := startServeOutput(t, noEnv, "--db", dsn, "--tls-cert", certPath, "--tls-key", keyPath)
	roots := x509.NewCertPool()
	roots.AddCert(first)
	// served asks /healthz over a new connection and returns the
	// certificate it was shown and the protocol it spoke.
	served := func(t *testing.T) (string, string) {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/healthz: %d", res.StatusCode)
		}
		return res.TLS.PeerCertificates[0].Subject.CommonName, res.Proto
	}
	if cn, proto := served(t); cn != "first" || proto != "HTTP/2.0" {
		t.Fatalf("served %q over %s, want first over HTTP/2.0", cn, proto)
	}
	if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered on a TLS listener")
		}
	}
	second := selfSigned(t, "second", certPath, keyPath)
	roots.AddCert(second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cn, _ := served(t)
		if cn == "second" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q after the files were replaced:\n%s", cn, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestTLSRefusesAPairThatDoesNotLoad(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	selfSigned(t, "a", certPath, keyPath)
	selfSigned(t, "b", filepath.Join(dir, "other.crt"), keyPath) // the key no longer matches
	if out, err := runCmd(t, noEnv, "serve", "--db", dsn, "--addr", "127.0.0.1:0", "--tls-cert", certPath, "--tls-key", keyPath); err == nil {
		t.Fatalf("started:\n%s", out)
	}
}

func TestHealthcheckAsksReadyz(t *testing.T) {
	t.Parallel()
	dsn := storetest.DSN(t, store.SQLite)
	storetest.OpenDSN(t, dsn, true)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	selfSigned(t, "probe", certPath, keyPath)
	plain, _ := startServe(t, noEnv, "--db", dsn)
	secure, _ := startServe(t, noEnv, "--db", dsn, "--tls-cert", certPath, "--tls-key", keyPath)
	if out, err := runCmd(t, noEnv, "healthcheck", "--addr", plain); err != nil || !strings.HasPrefix(out, "ok") {
		t.Errorf("a ready server: %v %q", err, out)
	}
	_, port, _ := net.SplitHostPort(secure)
	env := func(k string) string {
		return map[string]string{"FLOWSNAP_ADDR": "0.0.0.0:" + port, "FLOWSNAP_TLS_CERT": certPath}[k]
	}
	if out, err := runCmd(t, env, "healthcheck"); err != nil {
		t.Errorf("a ready HTTPS server, configured by serve's environment: %v %q", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if _, err := runCmd(t, noEnv, "healthcheck", "--addr", closed); err == nil || opscli.ExitCode(err) != 1 {
		t.Errorf("nothing listening: %v, want exit 1", err)
	}
}
