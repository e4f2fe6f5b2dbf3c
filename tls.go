package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certFiles serves the certificate of a PEM certificate and key file pair,
// reading them again when either changes (a renewed certificate is served
// without a restart). A pair that does not load keeps the last good one,
// logged.
type certFiles struct {
	certPath, keyPath string
	log               *slog.Logger
	// every is the least time between two looks at the files.
	every time.Duration

	mu                  sync.Mutex
	cert                *tls.Certificate
	certStamp, keyStamp os.FileInfo
	looked              time.Time
}

// loadCertFiles reads the pair once; it fails when it does not load, since
// a server must not start without its certificate.
func loadCertFiles(certPath, keyPath string, log *slog.Logger) (*certFiles, error) {
	c := &certFiles{certPath: certPath, keyPath: keyPath, log: log, every: time.Second}
	c.certStamp, c.keyStamp = stat(certPath), stat(keyPath)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certPath, keyPath, err)
	}
	c.cert, c.looked = &cert, time.Now()
	return c, nil
}

func stat(path string) os.FileInfo {
	fi, _ := os.Stat(path)
	return fi
}

func changed(was, now os.FileInfo) bool {
	if was == nil || now == nil {
		return was != now
	}
	return !os.SameFile(was, now) || !was.ModTime().Equal(now.ModTime()) || was.Size() != now.Size()
}

// GetCertificate fits tls.Config.GetCertificate: the current certificate,
// read again first when the files changed since they were last looked at
// (at most once per second).
func (c *certFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.looked) < c.every {
		return c.cert, nil
	}
	c.looked = time.Now()
	certStamp, keyStamp := stat(c.certPath), stat(c.keyPath)
	if !changed(c.certStamp, certStamp) && !changed(c.keyStamp, keyStamp) {
		return c.cert, nil
	}
	c.certStamp, c.keyStamp = certStamp, keyStamp
	cert, err := tls.LoadX509KeyPair(c.certPath, c.keyPath)
	if err != nil {
		// A certificate and key replaced one after the other do not match
		// in between: the next look, once both are new, loads them.
		c.log.Warn("TLS certificate not reloaded: serving the previous one", slog.String("cert", c.certPath), slog.String("error", err.Error()))
		c.certStamp, c.keyStamp = nil, nil
		return c.cert, nil
	}
	c.cert = &cert
	c.log.Info("TLS certificate reloaded", slog.String("cert", c.certPath))
	return c.cert, nil
}

// tlsConfig is the server's TLS configuration: TLS 1.2 and later, HTTP/2
// offered first.
func (c *certFiles) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: c.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}
