package main

import (
	"net"
	"net/http"
	"os"
	"strings"
)

// hostGuard answers a request whose Host header names no host this server is
// meant to be reached by with 421 Misdirected Request, so that a page on
// another site whose name an attacker points at 127.0.0.1 (DNS rebinding)
// cannot read a server on loopback (docs/contract.md#allowed-hosts). allowed
// nil admits every host.
type hostGuard struct {
	next    http.Handler
	allowed map[string]bool
}

// newHostGuard admits the hosts given (--allowed-hosts; * admits all),
// loopback's names, and the host of each listen address in addrs (as given,
// and as listened on); a listener on every interface admits each
// interface's addresses and the machine's name too.
func newHostGuard(next http.Handler, given []string, addrs ...string) http.Handler {
	allowed := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	for _, h := range given {
		h = strings.TrimSpace(h)
		if h == "*" {
			return next
		}
		if h != "" {
			allowed[canonicalHost(h)] = true
		}
	}
	for _, addr := range addrs {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			allowed[canonicalHost(host)] = true
			continue
		}
		if ifaddrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range ifaddrs {
				if n, ok := a.(*net.IPNet); ok {
					allowed[n.IP.String()] = true
				}
			}
		}
		if name, err := os.Hostname(); err == nil {
			allowed[canonicalHost(name)] = true
		}
	}
	return &hostGuard{next: next, allowed: allowed}
}

// canonicalHost is a Host header's host: without its port and brackets,
// in lower case, without a trailing dot.
func canonicalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return strings.ToLower(h)
}

func (g *hostGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.allowed[canonicalHost(r.Host)] {
		http.Error(w, "this server is not reached by that host name: add it with --allowed-hosts", http.StatusMisdirectedRequest)
		return
	}
	g.next.ServeHTTP(w, r)
}
