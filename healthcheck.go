package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"
)

// healthcheckCommand is `flowsnap healthcheck`: the probe of a container
// image that has no curl. It asks the server on --addr for /readyz and
// exits 0 when it answers 200, 1 otherwise. Its flags share their
// environment twins with serve's (FLOWSNAP_ADDR, FLOWSNAP_TLS_CERT), so a
// container's environment configures both alike.
func healthcheckCommand(b binder, stdout io.Writer) *cli.Command {
	var addr, cert string
	return &cli.Command{
		Name:  "healthcheck",
		Usage: "ask a server on this machine whether it is ready (/readyz): exit 0 when it is, 1 when not",
		Flags: []cli.Flag{
			bind(b, &cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Usage: "the server's listen address (HOST:PORT); an address of every interface is asked on loopback"}, &addr),
			bind(b, &cli.StringFlag{Name: "tls-cert", Usage: "set when the server serves HTTPS: the probe then speaks TLS, without checking the certificate, to loopback only"}, &cert),
		},
		Action: func(ctx context.Context, _ *cli.Command) error {
			return healthcheck(ctx, addr, cert != "", stdout)
		},
	}
}

// healthcheck asks addr's /readyz, within five seconds.
func healthcheck(ctx context.Context, addr string, useTLS bool, stdout io.Writer) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme, tr := "http", http.DefaultTransport.(*http.Transport).Clone()
	if useTLS {
		// The certificate names the server as its clients reach it, not
		// as loopback; the probe checks readiness, not identity.
		scheme, tr.TLSClientConfig = "https", &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback probe
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := scheme + "://" + net.JoinHostPort(host, port) + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, res.Status, body)
	}
	_, _ = stdout.Write(body)
	return nil
}
