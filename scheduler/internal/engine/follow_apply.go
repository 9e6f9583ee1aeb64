package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// readChanges reads the feed from the cursor, and the entries of the
// schedules found stale, and takes them in as one plan set. A feed whose
// head is behind the cursor is a store that lost its schedules: every
// schedule is read again.
func (e *Engine) readChanges(ctx context.Context, st slotstore.Store) error {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var got []slotstore.CatalogEntry
	cursor := e.follow.cursor
	for len(got) < maxApply {
		c, err := st.ScheduleChanges(cctx, slotstore.ChangesParams{After: cursor, Limit: schedulePage})
		if err != nil {
			return fmt.Errorf("schedules: read the writes after %d: %w", cursor, err)
		}
		if c.Head < cursor {
			e.log.Warn("the store's schedule writes went back: it lost them; reading every schedule again",
				"cursor", cursor, "head", c.Head)
			return e.reloadSchedules(ctx, st)
		}
		got = append(got, c.Entries...)
		if len(c.Entries) > 0 {
			cursor = c.Entries[len(c.Entries)-1].Seq
		}
		if len(c.Entries) < schedulePage {
			break
		}
	}
	stale, err := e.readStale(cctx, st)
	if err != nil {
		return err
	}
	if err := e.applySchedules(ctx, append(got, stale...), nil); err != nil {
		return err
	}
	e.follow.cursor = cursor
	return nil
}

// readStale reads the entries of the schedules whose claims found another
// spec in force; one the store no longer has is answered deleted.
func (e *Engine) readStale(ctx context.Context, st slotstore.Store) ([]slotstore.CatalogEntry, error) {
	e.follow.mu.Lock()
	var ids []string
	for id := range e.follow.stale {
		ids = append(ids, id)
	}
	clear(e.follow.stale)
	e.follow.mu.Unlock()
	var out []slotstore.CatalogEntry
	for len(ids) > 0 {
		n := min(len(ids), maxBatch)
		es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: ids[:n], Limit: n})
		if err != nil {
			e.markStale(ids...) // read again next time
			return nil, fmt.Errorf("schedules: read %d found stale: %w", n, err)
		}
		found := make(map[string]bool, len(es))
		for _, en := range es {
			found[en.Job] = true
			out = append(out, en)
		}
		for _, id := range ids[:n] {
			if !found[id] {
				out = append(out, slotstore.CatalogEntry{Job: id, Run: "-", Deleted: true})
			}
		}
		ids = ids[n:]
	}
	return out, nil
}

// markStale has the follower read ids' entries at its next read, and kicks
// it.
func (e *Engine) markStale(ids ...string) {
	if e.follow == nil {
		return
	}
	e.follow.mu.Lock()
	for _, id := range ids {
		e.follow.stale[id] = true
	}
	e.follow.mu.Unlock()
	select {
	case e.follow.kick <- struct{}{}:
	default:
	}
}

// reloadSchedules reads every schedule again and takes them in, dropping
// the plans of schedules the store no longer has.
func (e *Engine) reloadSchedules(ctx context.Context, st slotstore.Store) error {
	var all []slotstore.CatalogEntry
	head, err := readAll(ctx, st, func(page []slotstore.CatalogEntry) { all = append(all, page...) })
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(all))
	for _, en := range all {
		listed[en.Job] = true
	}
	if err := e.applySchedules(ctx, all, listed); err != nil {
		return err
	}
	e.follow.cursor = head
	return nil
}

// applySchedules takes in got, schedules' entries as the store has them
// now: a schedule whose job and spec a plan has keeps its plan, any other
// gets a new one, and a deleted or unusable one loses its plan. With
// listed (a reading of every schedule), the plans of schedules not in it
// go too. The new set is handed to the loop of the Run in progress.
func (e *Engine) applySchedules(ctx context.Context, got []slotstore.CatalogEntry, listed map[string]bool) error {
	e.reloading.Lock()
	defer e.reloading.Unlock()
	prev := e.jobs()
	repl := make(map[string]*plan) // a new plan, or nil for none
	for _, en := range got {
		cur := prev.held[shardOf(en.Job)][en.Job]
		if cur != nil && !en.Deleted && cur.run == en.Run && cur.spec.Fingerprint == en.InForce.Fingerprint {
			// The plan it has: kept, with its place in the heap.
			cur.conflict.Store(nil)
			delete(repl, en.Job)
			continue
		}
		switch p := e.planOf(prev, en); {
		case p != nil:
			repl[en.Job] = p
		case cur != nil:
			repl[en.Job] = nil
		}
	}
	if listed != nil {
		for _, p := range prev.schedules() {
			if !listed[p.name] {
				repl[p.name] = nil
			}
		}
	}
	if len(repl) == 0 {
		return nil
	}
	next, fresh, gone := prev.withSchedules(repl)
	if e.live.cur.Load() == nil {
		e.set.Store(next)
		return nil
	}
	req := reloadReq{set: next, fresh: fresh, gone: gone, done: make(chan struct{}), schedules: true}
	select {
	case e.reloads <- req:
	case <-ctx.Done():
		return fmt.Errorf("schedules: %w", ctx.Err())
	}
	<-req.done
	return nil
}
