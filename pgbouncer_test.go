package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/flowsnap/flowsnap/store/pgreplica"
)

// TestReadsThroughPgBouncerInTransactionPooling serves a primary and its
// standby through a PgBouncer in transaction pooling mode with one server
// connection per database, so every flowsnap connection shares it: the
// exec modes that prepare nothing across transactions answer every read.
func TestReadsThroughPgBouncerInTransactionPooling(t *testing.T) {
	r := newReplicated(t)
	name, _, _ := strings.Cut(r.primary[strings.LastIndex(r.primary, "/")+1:], "?")
	port := pgreplica.PgBouncer(t, map[string]string{
		"p_" + name: fmt.Sprintf("host=127.0.0.1 port=%d dbname=%s", r.pair.PrimaryPort, name),
		"s_" + name: fmt.Sprintf("host=127.0.0.1 port=%d dbname=%s", r.pair.StandbyPort, name),
	})
	for _, mode := range []string{"exec", "simple_protocol", "describe_exec"} {
		t.Run(mode, func(t *testing.T) {
			addr, stop := startServe(t, noEnv, "--db", pgreplica.DSN(port, "p_"+name), "--replica", pgreplica.DSN(port, "s_"+name),
				"--pg-exec-mode", mode, "--max-readers", "4")
			t.Cleanup(func() { _ = stop() })
			base := "http://" + addr
			var wg sync.WaitGroup
			errs := make(chan string, 40)
			for range 40 {
				wg.Go(func() {
					body, _ := json.Marshal(map[string]any{"query": childrenQuery + "\n", "variables": map[string]any{"after": nil}})
					res, err := http.Post(base+"/graphql", "application/json", strings.NewReader(string(body)))
					if err != nil {
						errs <- err.Error()
						return
					}
					defer res.Body.Close()
					var a gqlAnswer
					_ = json.NewDecoder(res.Body).Decode(&a)
					if len(a.Errors) > 0 || a.Extensions.Position == nil || !strings.Contains(string(a.Data["run"]), "child-001") {
						errs <- fmt.Sprintf("%+v", a)
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Errorf("a read through PgBouncer failed: %s", e)
			}
			if _, body := httpGet(t, base+"/readyz"); !strings.Contains(body, "healthy") {
				t.Errorf("the standby behind PgBouncer is not healthy:\n%s", body)
			}
		})
	}
}
