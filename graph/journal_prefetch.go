package graph

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/flowsnap/flowsnap/snapshot"
)

// journal reads ahead a journal field f of runs, and what its selection
// asks of the steps it yields, so that the journal of a page of runs costs
// a statement per field and level, as their children and rounds do.
func (p prefetcher) journal(f graphql.CollectedField, runs []*snapshot.Run) {
	if f.Name == "currentStep" {
		cur, _ := p.l.journal.current.readAhead(p.ctx, runs, keysBatch)
		p.steps(f.Selections, cur)
		return
	}
	first, after, ok := pageArgs(f, p.oc.Variables)
	if !ok {
		return
	}
	keys := journalPageKeys(runs, first, after)
	switch f.Name {
	case "inboundEvents":
		_, _ = p.l.journal.inbound.readAhead(p.ctx, keys, pagesBatch)
	case "events":
		_, _ = p.l.journal.runEvents.readAhead(p.ctx, keys, pagesBatch)
	case "steps":
		pages, _ := p.l.journal.steps.readAhead(p.ctx, keys, pagesBatch)
		var steps []snapshot.Step
		for _, page := range pages {
			if page == nil {
				continue
			}
			for _, e := range page.Edges {
				steps = append(steps, e.Step)
			}
		}
		// A connection's steps are selected through nodes and through
		// edges { node }.
		for _, cf := range graphql.CollectFields(p.oc, f.Selections, []string{"StepConnection"}) {
			switch cf.Name {
			case "nodes":
				p.steps(cf.Selections, steps)
			case "edges":
				for _, ef := range graphql.CollectFields(p.oc, cf.Selections, []string{"StepEdge"}) {
					if ef.Name == "node" {
						p.steps(ef.Selections, steps)
					}
				}
			}
		}
	}
}

// stepWork is a selection on Step to apply to steps.
type stepWork struct {
	sel   ast.SelectionSet
	steps []snapshot.Step
}

// steps reads ahead what sel asks of steps, level by level: the attempts
// of run steps and the parent steps, and then what is asked of those.
func (p prefetcher) steps(sel ast.SelectionSet, steps []snapshot.Step) {
	todo := []stepWork{{sel: sel, steps: steps}}
	for len(todo) > 0 {
		var next []stepWork
		for _, w := range todo {
			// Fragments on one kind of step select fields of that kind
			// only, so each kind collects its own fields.
			byType := map[string][]snapshot.Step{}
			for _, s := range w.steps {
				if name := stepTypeName(s); name != "" {
					byType[name] = append(byType[name], s)
				}
			}
			for typ, group := range byType {
				for _, f := range graphql.CollectFields(p.oc, w.sel, []string{typ, "Step"}) {
					switch f.Name {
					case "attempts":
						last, ok := intArg(f, p.oc.Variables, "last")
						if !ok {
							continue
						}
						keys := make([]attemptsKey, len(group))
						for i, s := range group {
							keys[i] = newAttemptsKey(s.Base().Key(), last)
						}
						_, _ = p.l.journal.attempts.readAhead(p.ctx, keys, keysBatch)
					case "parentStep":
						var keys []snapshot.StepKey
						for _, s := range group {
							if b := s.Base(); b.ParentStepID != nil {
								keys = append(keys, snapshot.StepKey{RunID: b.RunID, StepID: *b.ParentStepID})
							}
						}
						got, _ := p.l.journal.step.readAhead(p.ctx, keys, keysBatch)
						next = append(next, stepWork{sel: f.Selections, steps: got})
					}
				}
			}
		}
		todo = next
	}
}

// stepTypeName is the GraphQL type of s; "" for nil.
func stepTypeName(s snapshot.Step) string {
	switch s.(type) {
	case *snapshot.RunStep:
		return "RunStep"
	case *snapshot.SleepStep:
		return "SleepStep"
	case *snapshot.WaitStep:
		return "WaitStep"
	}
	return ""
}

// intArg reads an optional Int argument as the resolver will get it; ok is
// false when it is not what the schema allows, which the resolver reports.
func intArg(f graphql.CollectedField, vars map[string]any, name string) (n *int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	v, present := f.ArgumentMap(vars)[name]
	if !present || v == nil {
		return nil, true
	}
	i, isInt := toInt(v)
	if !isInt {
		return nil, false
	}
	return &i, true
}
