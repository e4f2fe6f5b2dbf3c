package live

import "context"

// Tick runs one tick of w, as Run does at each interval.
func (w *Watcher) Tick(ctx context.Context) { w.tick(ctx) }
