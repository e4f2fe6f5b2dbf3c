package snapshot

import "testing"

func TestRunCacheDropsTheLeastRecentlyUsedRunsToStayWithinItsBytes(t *testing.T) {
	run := func(id string) *Run { return &Run{ID: id, Revision: 1} }
	size := runSize(run("a"))
	c := newRunCache(16 * size) // room for 16 runs, none too large for it
	var ids []string
	for i := range 16 {
		ids = append(ids, string(rune('a'+i)))
	}
	for _, id := range ids {
		c.put("s", []*Run{run(id)})
	}
	if _, ok := c.get("s", "a", 1); !ok {
		t.Fatal("a run put is not held")
	}
	c.put("s", []*Run{run("q")})
	if _, ok := c.get("s", "a", 1); !ok {
		t.Error("the run read last was dropped")
	}
	if _, ok := c.get("s", "b", 1); ok {
		t.Error("the run used least recently was kept past the bound")
	}
	if c.bytes > c.max || c.bytes != c.runs.Len()*size {
		t.Errorf("%d bytes held for %d runs of %d, bound %d", c.bytes, c.runs.Len(), size, c.max)
	}
	c.put("s", []*Run{run("a"), run("a")})
	if c.bytes != c.runs.Len()*size {
		t.Errorf("a run put again is counted twice: %d bytes for %d runs", c.bytes, c.runs.Len())
	}
	c.put("other", []*Run{run("x")})
	if c.runs.Len() != 1 || c.bytes != size {
		t.Errorf("another source's runs were kept: %d runs, %d bytes", c.runs.Len(), c.bytes)
	}
	if _, ok := c.get("s", "a", 1); ok {
		t.Error("a run of the old source answers for the new one")
	}
}
