package snapshot

import "testing"

func at(source string, rev int64) Position { return Position{Source: source, Revision: rev} }

func TestRunCacheDropsTheLeastRecentlyUsedRunsToStayWithinItsBytes(t *testing.T) {
	run := func(id string) *Run { return &Run{ID: id, Revision: 1} }
	size := runSize(run("a"))
	c := newRunCache(16 * size) // room for 16 runs, none too large for it
	var ids []string
	for i := range 16 {
		ids = append(ids, string(rune('a'+i)))
	}
	for _, id := range ids {
		c.put(at("s", 1), []*Run{run(id)})
	}
	if _, ok := c.get(at("s", 1), "a", 1, true); !ok {
		t.Fatal("a run put is not held")
	}
	c.put(at("s", 1), []*Run{run("q")})
	if _, ok := c.get(at("s", 1), "a", 1, true); !ok {
		t.Error("the run read last was dropped")
	}
	if _, ok := c.get(at("s", 1), "b", 1, true); ok {
		t.Error("the run used least recently was kept past the bound")
	}
	if c.bytes > c.max || c.bytes != c.runs.Len()*size {
		t.Errorf("%d bytes held for %d runs of %d, bound %d", c.bytes, c.runs.Len(), size, c.max)
	}
	c.put(at("s", 1), []*Run{run("a"), run("a")})
	if c.bytes != c.runs.Len()*size {
		t.Errorf("a run put again is counted twice: %d bytes for %d runs", c.bytes, c.runs.Len())
	}
	c.put(at("other", 1), []*Run{run("x")})
	if c.runs.Len() != 1 || c.bytes != size {
		t.Errorf("another source's runs were kept: %d runs, %d bytes", c.runs.Len(), c.bytes)
	}
	if _, ok := c.get(at("s", 1), "a", 1, true); ok {
		t.Error("a run of the old source answers for the new one")
	}
}

// TestTheCacheTakesOnlyRunsTheWatcherSawUnchanged walks the run cache
// through what the revision watcher tells it, and checks after each step
// which runs a read at which revision may take without a statement.
func TestTheCacheTakesOnlyRunsTheWatcherSawUnchanged(t *testing.T) {
	run := func(id string, rev int64) *Run { return &Run{ID: id, Revision: rev} }
	c := newRunCache(1 << 20)
	fresh := func(step string, pos Position, id string, want bool) {
		t.Helper()
		if _, ok := c.fresh(pos, id); ok != want {
			t.Errorf("%s: %s at %v taken without a statement: %v, want %v", step, id, pos, ok, want)
		}
	}
	// Nothing told yet: nothing is known unchanged, whenever it was read.
	c.put(at("s", 10), []*Run{run("a", 4)})
	fresh("before the watcher", at("s", 10), "a", false)

	// The watcher's first look at 10; a run read before it stays unknown,
	// one read at it is the latest up to 10.
	c.changesUnknown("s", 10)
	fresh("read before the first look", at("s", 10), "a", false)
	c.put(at("s", 10), []*Run{run("a", 4), run("b", 7)})
	fresh("read at the first look", at("s", 10), "a", true)
	fresh("an earlier read, after the run's revision", at("s", 5), "a", true)
	fresh("an earlier read, before the run's revision", at("s", 3), "a", false)
	fresh("a later read, past what the watcher saw", at("s", 11), "a", false)
	fresh("another source", at("t", 10), "a", false)
	fresh("a run not held", at("s", 10), "z", false)

	// Changes 11..14: b changed at 12, a run not held at 13. A read at
	// 12 takes a, not b.
	c.changesSeen("s", 10, 14, []Change{{RunID: "b", Revision: 12}, {RunID: "y", Revision: 13}})
	fresh("unchanged since", at("s", 12), "a", true)
	fresh("changed since", at("s", 12), "b", false)
	fresh("changed since, read before the change", at("s", 11), "b", false)

	// A run read at a revision the watcher has not reached yet is the
	// latest at that revision: known once the changes up to it are told
	// and do not name it again...
	c.put(at("s", 16), []*Run{run("b", 12), run("c", 15)})
	fresh("read ahead of the watcher", at("s", 14), "b", true)
	fresh("read ahead of the watcher, written after", at("s", 14), "c", false)
	c.changesSeen("s", 14, 16, []Change{{RunID: "c", Revision: 15}})
	fresh("told of the change it was read at", at("s", 16), "c", true)
	// ...and dropped when they do: a deletion, or a later revision.
	c.changesSeen("s", 16, 20, []Change{{RunID: "a", Revision: 18, Deleted: true}, {RunID: "c", Revision: 19}})
	fresh("deleted", at("s", 20), "a", false)
	fresh("changed again", at("s", 17), "c", false)
	fresh("untouched", at("s", 20), "b", true)

	// A run asked by its revision at a read from current on is known.
	c.put(at("s", 17), []*Run{run("d", 2)})
	fresh("read before current", at("s", 20), "d", false)
	if _, ok := c.get(at("s", 20), "d", 2, true); !ok {
		t.Fatal("a run held at its revision is not answered by it")
	}
	fresh("its revision read at current", at("s", 20), "d", true)

	// Changes told out of turn (a gap), or not all of them: nothing is
	// known any longer.
	c.changesSeen("s", 21, 25, nil)
	fresh("after a gap", at("s", 25), "b", false)
	c.put(at("s", 25), []*Run{run("b", 12)})
	fresh("read again after the gap", at("s", 25), "b", true)
	c.changesUnknown("s", 30)
	fresh("after changes not read", at("s", 25), "b", false)
	fresh("after changes not read, at them", at("s", 30), "b", false)

	// Another source's changes: the runs held are dropped.
	c.put(at("s", 30), []*Run{run("b", 12)})
	c.changesSeen("t", 30, 31, nil)
	if c.runs.Len() != 0 {
		t.Errorf("%d runs of the old source kept", c.runs.Len())
	}

	// Runs of another source read before the watcher tells of it: what
	// it knew of the old source's changes does not vouch for them.
	c.changesUnknown("s", 40)
	c.put(at("u", 50), []*Run{run("e", 35)})
	fresh("another source's run, its changes not told", at("u", 40), "e", false)
	fresh("another source's run, at its own revision", at("u", 50), "e", false)
	c.changesUnknown("u", 50)
	c.put(at("u", 50), []*Run{run("e", 35)})
	fresh("another source's run, once the watcher looked at it", at("u", 40), "e", true)
}
