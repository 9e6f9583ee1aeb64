package sqlitestore_test

import (
	"cmp"
	"slices"
	"testing"

	"github.com/slotcron/slotcron/slotstore"
)

// checkShared checks what the claimers of TestSharedFile saw against each
// other and against the file.
func checkShared(t *testing.T, s slotstore.Store, results []sharedResult) {
	type slotKey struct {
		job  string
		slot int64
	}
	bySlot := map[slotKey][]sharedResult{}
	for _, r := range results {
		k := slotKey{r.Job, r.Slot}
		bySlot[k] = append(bySlot[k], r)
	}
	if len(bySlot) != 2*sharedSlots {
		t.Fatalf("results for %d slots, want %d", len(bySlot), 2*sharedSlots)
	}

	winners := map[string][]sharedResult{} // by job
	for k, rs := range bySlot {
		if len(rs) != claimers {
			t.Errorf("%v: %d results, want one per claimer, %d", k, len(rs), claimers)
		}
		var won []sharedResult
		for _, r := range rs {
			if r.Status == slotstore.Won {
				won = append(won, r)
			}
		}
		if len(won) != 1 {
			t.Errorf("%v: %d winners: %+v", k, len(won), won)
			continue
		}
		w := won[0]
		winners[k.job] = append(winners[k.job], w)
		for _, r := range rs {
			if r.Status != slotstore.Won && (r.Status != slotstore.Held || r.Holder != w.Replica || r.Fence != w.Fence) {
				t.Errorf("%v: %s saw %v by %s fence %d; %s won with fence %d", k, r.Replica, r.Status, r.Holder, r.Fence, w.Replica, w.Fence)
			}
		}
	}

	for job, ws := range winners {
		// Fences come from one counter per job, floored by the clock:
		// without repeats, and in the order the claims were made.
		slices.SortFunc(ws, func(a, b sharedResult) int { return cmp.Compare(a.Fence, b.Fence) })
		for i, w := range ws {
			if i > 0 && w.Fence == ws[i-1].Fence {
				t.Errorf("job %s: fences %v repeat", job, fencesOf(ws))
				break
			}
			if i > 0 && w.ClaimedAt < ws[i-1].ClaimedAt {
				t.Errorf("job %s: fence %d claimed at %d, before fence %d at %d", job, w.Fence, w.ClaimedAt, ws[i-1].Fence, ws[i-1].ClaimedAt)
			}
		}
		// Each claimer claims the slots in order, so its own fences grow.
		last := map[string]int64{}
		slices.SortFunc(ws, func(a, b sharedResult) int { return cmp.Compare(a.Slot, b.Slot) })
		for _, w := range ws {
			if w.Fence <= last[w.Replica] {
				t.Errorf("job %s: %s won fence %d after fence %d", job, w.Replica, w.Fence, last[w.Replica])
			}
			last[w.Replica] = w.Fence
		}
		// The file agrees with what the winners were told.
		ms, err := s.History(t.Context(), slotstore.HistoryParams{Job: job, Limit: 2 * sharedSlots})
		if err != nil || len(ms) != sharedSlots {
			t.Fatalf("history of %s: %d markers, %v", job, len(ms), err)
		}
		for _, m := range ms {
			i := slices.IndexFunc(ws, func(w sharedResult) bool { return w.Slot == m.Slot.Unix() })
			if i < 0 || ws[i].Fence != m.Fence || ws[i].Replica != m.Holder || m.Attempt != 1 {
				t.Errorf("history of %s: %+v does not match its winner", job, m)
			}
		}
	}
}

func fencesOf(rs []sharedResult) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Fence
	}
	return out
}
