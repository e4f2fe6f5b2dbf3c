package snapshot

import (
	"encoding/json"
	"testing"

	"github.com/flowsnap/flowsnap/store/vocab"
)

var ackSeeds = []string{
	`{"observedAtMs":1700000000000,"owner":{"hostId":"host-a","pid":42,"nonce":"n-1"}}`,
	`{"observedAtMs":0,"owner":{"hostId":"h","pid":0,"nonce":"n"}}`,
	`{"observedAtMs":9007199254740991,"owner":{"hostId":"h","pid":9007199254740992,"nonce":"n"}}`,
	`{"observedAtMs":99999999999999999,"owner":{"hostId":"h","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":01,"owner":{"hostId":"h","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":-1,"owner":{"hostId":"h","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":1.5,"owner":{"hostId":"h","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":1,"owner":{"hostId":"caf\u00e9","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":1,"owner":{"hostId":"café","pid":1,"nonce":"n\"q"}}`,
	`{"observedAtMs":1,"owner":{"hostId":"h","pid":1,"nonce":"n"},"extra":true}`,
	`{"observedAtMs":1,"owner":{"hostId":"h","pid":1,"nonce":"n"}} `,
	`{ "observedAtMs": 1, "owner": {"hostId": "h", "pid": 1, "nonce": "n"} }`,
	`{"owner":{"hostId":"h","pid":1,"nonce":"n"},"observedAtMs":1}`,
	`{"ObservedAtMs":1,"owner":{"hostId":"h","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":1,"owner":{"hostId":null,"pid":1,"nonce":"n"}}`,
	`{"observedAtMs":1,"owner":{"hostId":"","pid":1,"nonce":"n"}}`,
	`{"observedAtMs":1,"owner":{"hostId":"h","pid":1}}`,
	`{"observedAtMs":1}`,
	`[]`,
}

// TestEngineAckReadsWhatTheEngineWrites holds the fast reading to the form
// the engine writes: were the two to drift apart, every acknowledgement
// would be decoded the slow way and this fails.
func TestEngineAckReadsWhatTheEngineWrites(t *testing.T) {
	raw, err := json.Marshal(struct {
		ObservedAtMs int64       `json:"observedAtMs"`
		Owner        vocab.Owner `json:"owner"`
	}{1700000000123, vocab.Owner{HostID: "worker-7.example", PID: 31337, Nonce: "b6f0c2"}})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := engineAck(raw)
	want := ackFields{observed: "1700000000123", pid: "31337", host: "worker-7.example", nonce: "b6f0c2"}
	if !ok || a != want {
		t.Fatalf("engineAck(%s) = %+v, %v; want %+v, true", raw, a, ok, want)
	}
}

func TestEngineAckAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range ackSeeds {
		checkAck(t, []byte(doc))
	}
}

func FuzzEngineAck(f *testing.F) {
	for _, doc := range ackSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		checkAck(t, doc)
	})
}

// checkAck checks that whatever engineAck reads, decodedAck reads the same.
func checkAck(t *testing.T, doc []byte) {
	t.Helper()
	got, ok := engineAck(doc)
	if !ok {
		return
	}
	want, wantOK := decodedAck(doc)
	if !wantOK || got != want {
		t.Errorf("%s: engineAck %+v, encoding/json %+v (%v)", doc, got, want, wantOK)
	}
}

// BenchmarkEngineAck reads an acknowledgement as the engine writes it,
// beside decodedAck's encoding/json.
func BenchmarkEngineAck(b *testing.B) {
	raw := []byte(`{"observedAtMs":1700000000123,"owner":{"hostId":"worker-7.example","pid":31337,"nonce":"b6f0c2"}}`)
	b.Run("jsonwire", func(b *testing.B) {
		for b.Loop() {
			if _, ok := engineAck(raw); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, ok := decodedAck(raw); !ok {
				b.Fatal("not read")
			}
		}
	})
}
