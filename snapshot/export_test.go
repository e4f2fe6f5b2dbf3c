package snapshot

// Hooks for the tests of package snapshot_test.

// WithoutWALGate turns r's WAL gate off, to measure what the gate prevents.
func WithoutWALGate(r *Reader) { r.gate = nil }

// WALGateState returns how many reads r's WAL gate counts as open and how
// many drains it has started; zeros when r has no gate.
func WALGateState(r *Reader) (active, drains int) {
	if r.gate == nil {
		return 0, 0
	}
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.gate.active, r.gate.drains
}
