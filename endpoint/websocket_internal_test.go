package endpoint

import (
	"context"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

func TestTheInitPayloadIsDroppedOnceInitHasRun(t *testing.T) {
	t.Parallel()
	payload := transport.InitPayload{"authorization": "Bearer a-token", "padding": string(make([]byte, 10_000))}
	var seen string
	init := dropInitPayload(func(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		seen = p.Authorization()
		return ctx, nil, nil
	})
	if _, _, err := init(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	if seen != "Bearer a-token" {
		t.Errorf("the init function saw %q", seen)
	}
	if len(payload) != 0 {
		t.Errorf("the connection keeps %d members of its payload after init", len(payload))
	}
	if _, _, err := dropInitPayload(nil)(context.Background(), transport.InitPayload{"a": "b"}); err != nil {
		t.Errorf("without an init function: %v", err)
	}
}

func TestThePingBucketAllowsItsRateInBursts(t *testing.T) {
	t.Parallel()
	b := newBucket(5)
	now := time.Unix(1000, 0)
	for i := range 5 {
		if !b.take(now) {
			t.Fatalf("ping %d of the burst refused", i)
		}
	}
	if b.take(now) {
		t.Fatal("a sixth ping in the same instant was allowed")
	}
	if !b.take(now.Add(200 * time.Millisecond)) {
		t.Error("a ping a fifth of a second later was refused")
	}
	if b.take(now.Add(210 * time.Millisecond)) {
		t.Error("a second ping within that fifth was allowed")
	}
	if got := 0; true {
		later := now.Add(10 * time.Second)
		for b.take(later) {
			got++
		}
		if got != 5 {
			t.Errorf("after a quiet spell %d pings were allowed at once, want the burst of 5", got)
		}
	}
}
