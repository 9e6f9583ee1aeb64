// Calendars, active windows, max_runs and the DST rule: the settings that
// say which of a schedule's slots are the job's to run, checked and
// resolved into the job's schedule and spec.

package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// checkCalendars reports bad calendars: a name a reason cannot carry, a
// date that is not YYYY-MM-DD.
func (c *Config) checkCalendars(add func(*ConfigError)) {
	for _, name := range sortedKeys(c.Calendars) {
		if name == "" || strings.ContainsAny(name, " \t\n,") {
			add(c.errAt(fmt.Sprintf("calendar name %q must be non-empty and contain no spaces or commas", name), "calendars", name))
		}
		for i, d := range c.Calendars[name].Dates {
			if _, err := time.Parse(time.DateOnly, d); err != nil {
				add(c.errAt(fmt.Sprintf("date %q (entry %d): want YYYY-MM-DD, a day that exists", d, i+1), "calendars", name, "dates"))
			}
		}
	}
}

// checkCalendarPolicy reports what p, set at path, says of calendars and
// DST that no job could follow: an unknown calendar, an unknown rule.
func (c *Config) checkCalendarPolicy(p Policy, path []string, add func(*ConfigError)) {
	at := func(keys ...string) []string { return append(append([]string{}, path...), keys...) }
	for _, name := range p.Except {
		if _, ok := c.Calendars[name]; !ok {
			add(c.errAt(fmt.Sprintf("no calendar named %q (calendars: %s)", name, listOrNone(sortedKeys(c.Calendars))), at("except")...))
		}
	}
	if p.DST.Gap != "" && !p.DST.Gap.Valid() {
		add(c.errAt(fmt.Sprintf("dst.gap %q: want shift or skip", p.DST.Gap), at("dst", "gap")...))
	}
	if p.DST.Repeat != "" && !p.DST.Repeat.Valid() {
		add(c.errAt(fmt.Sprintf("dst.repeat %q: want first or both", p.DST.Repeat), at("dst", "repeat")...))
	}
}

// boundSchedule returns sched, job name's parsed schedule, with the DST
// rule of pol and the job's active window and max_runs, and the calendars
// it skips; problems are reported through fail. own is what the job sets
// itself: a DST rule it sets on a schedule that follows real time is an
// error, one it inherits from defaults applies to fixed-time jobs only.
func (c *Config) boundSchedule(name string, own, pol Policy, sched *schedule.Schedule,
	fail func(*ConfigError)) (*schedule.Schedule, []engine.Calendar) {
	jc := c.Jobs[name]
	at := func(keys ...string) []string { return append([]string{"jobs", name}, keys...) }
	cals := c.calendarsOf(pol.Except)
	if jc.MaxRuns < 0 || jc.MaxRuns > maxMaxRuns {
		fail(c.errAt(fmt.Sprintf("max_runs %d: want 0 (no limit) to %d", jc.MaxRuns, maxMaxRuns), at("max_runs")...))
	} else if jc.MaxRuns > 0 && jc.Active.From.IsZero() {
		fail(c.errAt("max_runs needs active.from: the runs are counted from it, so every replica counts the same slots", at("max_runs")...))
	}
	from, until := jc.Active.From, jc.Active.Until
	if !from.IsZero() && !until.IsZero() && until.Before(from) {
		fail(c.errAt(fmt.Sprintf("active.until %s is before active.from %s", stampOf(until), stampOf(from)), at("active", "until")...))
	}
	if sched == nil {
		return nil, cals
	}
	if d := pol.DST; d != (DST{}) && (sched.Fixed() || own.DST != (DST{})) {
		s, err := sched.WithDST(schedule.DST{Gap: schedule.Gap(d.Gap), Repeat: schedule.Repeat(d.Repeat)})
		if err != nil {
			fail(c.errAt(plainSchedule(err.Error()), at("dst")...))
			return sched, cals
		}
		sched = s
	}
	if jc.MaxRuns > 0 && !from.IsZero() {
		last := engine.LastOfRuns(sched.Within(from, until), cals, from, jc.MaxRuns)
		switch {
		case last.IsZero() && until.IsZero():
			fail(c.errAt(fmt.Sprintf("max_runs %d: the schedule has fewer slots from active.from than that within reach (each within 5 years of the one before); set active.until, or fewer runs", jc.MaxRuns), at("max_runs")...))
		case last.Year() > 9999:
			fail(c.errAt(fmt.Sprintf("max_runs %d: the last of them would fall in the year %d, past 9999", jc.MaxRuns, last.Year()), at("max_runs")...))
		case !last.IsZero() && (until.IsZero() || last.Before(until)):
			until = last
		}
	}
	if !from.IsZero() || !until.IsZero() {
		sched = sched.Within(from, until)
	}
	return sched, cals
}

// calendarsOf returns the calendars named, each with its dates sorted and
// without repeats; unknown names are checkCalendarPolicy's to report.
func (c *Config) calendarsOf(names []string) []engine.Calendar {
	var out []engine.Calendar
	for _, name := range names {
		cal, ok := c.Calendars[name]
		if !ok || slices.ContainsFunc(out, func(e engine.Calendar) bool { return e.Name == name }) {
			continue
		}
		dates := slices.Clone(cal.Dates)
		slices.Sort(dates)
		out = append(out, engine.Calendar{Name: name, Dates: slices.Compact(dates)})
	}
	return out
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// stampOf is t in RFC 3339, UTC.
func stampOf(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// UnmarshalYAML reads active.from and active.until, each an RFC 3339 time
// (or a date, midnight UTC). A bad value is reported as a *yaml.TypeError
// naming its line, so decoding goes on and every error is reported
// together.
func (a *Active) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		From  yaml.Node `yaml:"from"`
		Until yaml.Node `yaml:"until"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	var msgs []string
	read := func(v *yaml.Node, to *time.Time) {
		if v.Kind == 0 {
			return
		}
		if err := v.Decode(to); err != nil || v.Kind != yaml.ScalarNode {
			msgs = append(msgs, fmt.Sprintf("line %d: %q is not a time: want RFC 3339, e.g. 2026-12-24T00:00:00Z or 2026-12-24T00:00:00+01:00", v.Line, v.Value))
		}
	}
	read(&raw.From, &a.From)
	read(&raw.Until, &a.Until)
	if len(msgs) > 0 {
		return &yaml.TypeError{Errors: msgs}
	}
	return nil
}
