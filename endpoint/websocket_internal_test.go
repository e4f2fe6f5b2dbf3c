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
		if wait := b.reserve(now); wait != 0 {
			t.Fatalf("ping %d of the burst waits %s", i, wait)
		}
	}
	if wait := b.reserve(now); wait != 200*time.Millisecond {
		t.Fatalf("a sixth ping in the same instant waits %s, want a fifth of a second", wait)
	}
	if wait := b.reserve(now); wait != 400*time.Millisecond {
		t.Fatalf("a seventh waits %s, want two fifths", wait)
	}
	// Ten seconds later the debt is paid and the burst is whole again.
	later := now.Add(10 * time.Second)
	for i := range 5 {
		if wait := b.reserve(later); wait != 0 {
			t.Fatalf("after a quiet spell ping %d waits %s", i, wait)
		}
	}
}
