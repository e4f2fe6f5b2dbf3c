package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flowsnap/flowsnap/store"
	"github.com/flowsnap/flowsnap/store/storetest"
)

// getWithHost GETs url with the Host header host and returns the status.
func getWithHost(t *testing.T, url, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestAForeignHostIsAnswered421(t *testing.T) {
	dsn := storetest.DSN(t, store.SQLite)
	if out, err := runCmd(t, noEnv, "migrate", "--db", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	addr, stop := startServe(t, noEnv, "--db", dsn)
	t.Cleanup(func() { _ = stop() })
	_, port, _ := strings.Cut(addr, ":")
	for host, want := range map[string]int{
		addr:                        http.StatusOK,
		"localhost:" + port:         http.StatusOK,
		"LOCALHOST.:" + port:        http.StatusOK,
		"[::1]:" + port:             http.StatusOK,
		"rebound.example:" + port:   http.StatusMisdirectedRequest,
		"rebound.example":           http.StatusMisdirectedRequest,
		"127.0.0.1.example:" + port: http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/healthz", "/graphql?query=%7Bposition%7Brevision%7D%7D", "/"} {
			if got := getWithHost(t, "http://"+addr+path, host); got != want {
				t.Errorf("GET %s with Host %s = %d, want %d", path, host, got, want)
			}
		}
	}

	// --allowed-hosts, through its environment twin, adds names; * admits
	// any.
	env := map[string]string{"FLOWSNAP_DB": dsn, "FLOWSNAP_ALLOWED_HOSTS": "flowsnap.example,other.example"}
	addr2, stop2 := startServe(t, func(k string) string { return env[k] })
	t.Cleanup(func() { _ = stop2() })
	if got := getWithHost(t, "http://"+addr2+"/healthz", "Flowsnap.Example"); got != http.StatusOK {
		t.Errorf("an allowed host = %d", got)
	}
	if got := getWithHost(t, "http://"+addr2+"/healthz", "rebound.example"); got != http.StatusMisdirectedRequest {
		t.Errorf("a host not allowed = %d", got)
	}
	addr3, stop3 := startServe(t, noEnv, "--db", dsn, "--allowed-hosts", "*")
	t.Cleanup(func() { _ = stop3() })
	if got := getWithHost(t, "http://"+addr3+"/healthz", "anything.example"); got != http.StatusOK {
		t.Errorf("--allowed-hosts * = %d", got)
	}
}
