package snapshot

import (
	"context"

	"github.com/flowsnap/flowsnap/fault"
	"github.com/flowsnap/flowsnap/store/vocab"
)

// MaxBatch is the most run ids one batch read takes.
const MaxBatch = 200

// Runs reads the snapshots of ids in the read carried by ctx: one Result per
// id, in request order, duplicates answered in place. It fails as a whole
// only for more than MaxBatch ids or when the store cannot be read; an
// empty batch still reads the position.
func (r *Reader) Runs(ctx context.Context, ids []string) ([]Result[Snapshot], error) {
	if len(ids) > MaxBatch {
		return nil, fault.Errorf(fault.BadUserInput, "a batch takes at most %d ids, got %d", MaxBatch, len(ids))
	}
	return r.Load(ctx, ids)
}

// Load reads the snapshots of any number of ids, like Runs but without
// the batch limit: for batching that flowsnap does itself (gathering the
// parents of a whole page of runs), never for a list of ids a client sent.
func (r *Reader) Load(ctx context.Context, ids []string) ([]Result[Snapshot], error) {
	var out []Result[Snapshot]
	err := r.with(ctx, func(q *querier) error {
		var err error
		out, err = q.runs(ids)
		return err
	})
	return out, err
}

// Run reads the snapshot of one id. A malformed id or a broken row is
// returned as the error.
func (r *Reader) Run(ctx context.Context, id string) (Snapshot, error) {
	res, err := r.Runs(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	return res[0].Get()
}

// runs reads ids in one statement.
func (q *querier) runs(ids []string) ([]Result[Snapshot], error) {
	out := make([]Result[Snapshot], len(ids))
	// first maps each distinct id to its first place in ids; only ids that
	// repeat are looked for again, after the read.
	first := make(map[string]int, len(ids))
	distinct := make([]string, 0, len(ids))
	repeats := false
	for i, id := range ids {
		if err := vocab.CheckID("an id", id); err != nil {
			out[i].Err = err
			continue
		}
		if _, seen := first[id]; seen {
			repeats = true
			continue
		}
		first[id] = i
		distinct = append(distinct, id)
	}
	if len(distinct) == 0 {
		return out, nil
	}
	var raw rawRun
	read := 0
	err := q.each(q.rd.r.selectRuns, []any{q.dialect().TextListArg(distinct)}, raw.dest(), "reading runs", func() error {
		i, ok := indexOf(first, raw.idText)
		if !ok || out[i].Value != nil || out[i].Err != nil {
			return fault.Errorf(fault.PersistenceFailed, "the store answered a run that was not asked for")
		}
		raw.id = ids[i]
		out[i].Value, out[i].Err = raw.decode(q.pos())
		read++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if read != len(distinct) {
		return nil, fault.Errorf(fault.PersistenceFailed, "the store answered fewer runs than asked")
	}
	if repeats {
		for i, id := range ids {
			if j, ok := first[id]; ok && j != i {
				out[i] = out[j]
			}
		}
	}
	return out, nil
}
