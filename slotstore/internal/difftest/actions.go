package difftest

import (
	"errors"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// actionLog is what the driver keeps of the entries appended to both
// stores' actions logs, in append order.
type actionLog struct {
	got, mem []slotstore.Action
}

// The values random entries take: few, so that filters match some.
var (
	actionWho    = []string{"alice", "bob", "slotcron"}
	actionKinds  = []string{"pause", "resume", "trigger"}
	actionTarget = []string{"", "a", "b"}
)

func (d *driver) pick(vs []string) string { return vs[d.rng.IntN(len(vs))] }

// actions appends one to three random entries to both actions logs (now
// and then an invalid one, which both refuse), compares what each append
// returned, then reads a random page of both logs (filters, Limit, Before
// and Since, the latter two an entry's own in each store) and compares
// them: the entries' fields, and their Seqs through the pairing of the
// two stores' appends. Times are each store's own and not compared.
func (d *driver) actions() {
	ctx := d.t.Context()
	for range 1 + d.rng.IntN(3) {
		a := slotstore.Action{Who: d.pick(actionWho), Role: d.pick([]string{"", "operator", "admin"}), Via: "http",
			Kind: d.pick(actionKinds), Target: d.pick(actionTarget), Reason: fmt.Sprintf("step %d", d.step), Result: "ok",
			Detail: d.pick([]string{"", "2026-11-29T02:00:00Z"}), Retain: time.Hour}
		if d.rng.IntN(10) == 0 {
			a.Kind = ""
		}
		g, gerr := d.got.AppendAction(ctx, a)
		m, merr := d.mem.AppendAction(ctx, a)
		if errors.Is(gerr, slotstore.ErrInvalid) != errors.Is(merr, slotstore.ErrInvalid) ||
			(gerr != nil) != (merr != nil) || (gerr != nil && !errors.Is(gerr, slotstore.ErrInvalid)) {
			d.t.Fatalf("step %d: append action %+v: backend %v, memstore %v", d.step, a, gerr, merr)
		}
		if gerr != nil {
			continue
		}
		if !sameEntry(g, m) || (len(d.acts.got) > 0 && g.Seq <= d.acts.got[len(d.acts.got)-1].Seq) {
			d.t.Fatalf("step %d: append action: backend returned %+v, memstore %+v, after %d entries", d.step, g, m, len(d.acts.got))
		}
		d.acts.got, d.acts.mem = append(d.acts.got, g), append(d.acts.mem, m)
	}
	gp, mp := slotstore.ActionsParams{Limit: 1 + d.rng.IntN(6)}, slotstore.ActionsParams{}
	if d.rng.IntN(3) == 0 {
		gp.Who = d.pick(actionWho)
	}
	if d.rng.IntN(3) == 0 {
		gp.Kind = d.pick(actionKinds)
	}
	if d.rng.IntN(4) == 0 {
		gp.Target = d.pick(actionTarget)
	}
	mp = gp
	if n := len(d.acts.got); n > 0 && d.rng.IntN(2) == 0 {
		i := d.rng.IntN(n)
		gp.Before, mp.Before = d.acts.got[i].Seq, d.acts.mem[i].Seq
	}
	// Since an entry's At, when the backend's clock had moved since the
	// entry before (memstore's moves at every call): the same entries are
	// then at or after it in both stores.
	if n := len(d.acts.got); n > 0 && d.rng.IntN(3) == 0 {
		i := d.rng.IntN(n)
		if i == 0 || d.acts.got[i-1].At.Before(d.acts.got[i].At) {
			gp.Since, mp.Since = d.acts.got[i].At, d.acts.mem[i].At
		}
	}
	gl, gerr := d.got.Actions(ctx, gp)
	ml, merr := d.mem.Actions(ctx, mp)
	if gerr != nil || merr != nil {
		d.t.Fatalf("step %d: actions %+v: backend %v, memstore %v", d.step, gp, gerr, merr)
	}
	d.actionReads++
	if len(gl) != len(ml) {
		d.t.Fatalf("step %d: actions %+v: backend listed %d entries, memstore %d:\n%+v\n%+v", d.step, gp, len(gl), len(ml), gl, ml)
	}
	for i := range gl {
		if !sameEntry(gl[i], ml[i]) || d.memSeq(gl[i].Seq) != ml[i].Seq {
			d.t.Fatalf("step %d: actions %+v: entry %d: backend %+v, memstore %+v", d.step, gp, i, gl[i], ml[i])
		}
	}
}

// memSeq is the Seq memstore gave the append the backend gave seq, or -1.
func (d *driver) memSeq(seq int64) int64 {
	for i, g := range d.acts.got {
		if g.Seq == seq {
			return d.acts.mem[i].Seq
		}
	}
	return -1
}

// sameEntry reports whether two entries agree but for Seq and At.
func sameEntry(a, b slotstore.Action) bool {
	a.Seq, a.At, b.Seq, b.At = 0, time.Time{}, 0, time.Time{}
	return a == b
}
