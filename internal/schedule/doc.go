// Package schedule computes the slots of a job: the nominal instants, in UTC
// and to the second, at which it is due. Slots are a pure function of the
// spec, the time zone and the time asked about, never of when a process
// started or when it asks, so every replica computes the same slots.
//
// A Schedule is parsed once with Parse and then asked Next (the first slot
// after a time) and Prev (the last slot at or before a time). The engine
// walks slots by asking Next from the previous nominal slot, never from
// "now". robfig/cron parses the spec; its own Next is not used, because it
// mishandles daylight saving time.
//
// # Day specials
//
// Besides numbers, ranges, steps and lists, the day fields take these
// specials (letters in either case), which the parser's bit sets cannot
// express and which are checked day by day:
//
//   - Day-of-month "L": the last day of the month.
//   - Day-of-month "L-n", n from 1 to 30: n days before the last day, so
//     "L-3" is the 28th of a 31-day month and the 26th of February in a
//     leap year. A month shorter than n+1 days has none.
//   - Day-of-month "nW", n from 1 to 31: the weekday (Monday to Friday)
//     nearest day n, never in another month. If day n is a Saturday it is
//     the Friday before, or Monday the 3rd when n is the 1st; if a Sunday,
//     the Monday after, or the Friday before when n is the last day. A
//     month with no day n has none: "31W" never fires in April.
//   - Day-of-month "LW": the last weekday of the month.
//   - Day-of-week "D#n", n from 1 to 5: the nth day D of the month, so
//     "MON#2" is the second Monday. A month with no fifth D has none.
//   - Day-of-week "DL": the last day D of the month, so "5L" (or "FRIL") is
//     the last Friday.
//
// D is 0 to 7 (0 and 7 are Sunday) or SUN to SAT; a plain day-of-week
// value stays 0 to 6, as the parser reads it. A list may mix specials
// with plain values, "1,15,L" or "MON#1,FRIL": a day matches if any part
// does. A day field with a special is never "*" for cron's day rule: when
// both day fields are restricted, a day matches if either does, so
// "0 0 L * MON#1" fires on the last day and on the first Monday. Other
// fields refuse the specials.
//
// # "@every"
//
// "@every D" fires at the instants k·D after 1970-01-01T00:00:00Z, for every
// integer k, whatever the zone. D is a whole number of seconds, at least 1s.
//
// # Daylight saving time
//
// Calendar specs are read on the wall clock of their zone, and what happens
// when that clock jumps depends on the hour field:
//
//   - Fixed-time (the hour field is a number, a list or a range, and the
//     descriptors @daily, @midnight, @weekly, @monthly, @yearly): each
//     matching wall time fires once per local day, at the first instant the
//     local clock reads that time or later. A time skipped by a spring-forward
//     gap fires when the gap ends; a time repeated by a fall back fires at its
//     first occurrence only; wall times that land on the same instant give one
//     slot. That is the default rule; another may be chosen (see below).
//   - Elapsed-time (the hour field is "*" or a step such as "*/2", and
//     @hourly): the spec fires at every real second whose wall clock matches.
//     Times in a gap never fire; times in a repeated hour fire twice.
//
// # Worked example
//
// Europe/Berlin springs forward on 2026-03-29: at 01:00:00Z the clock jumps
// from 02:00 CET (+01:00) to 03:00 CEST (+02:00), so 02:00–02:59 never
// happen. It falls back on 2026-10-25: at 01:00:00Z the clock goes from
// 03:00 CEST back to 02:00 CET, so 02:00–02:59 happen twice.
//
//	spec          2026-03-29 (spring forward)       2026-10-25 (fall back)
//	30 2 * * *    01:00:00Z (03:00 CEST, gap end)   00:30:00Z (first 02:30 only)
//	30 * * * *    00:30:00Z, 01:30:00Z (no 02:30)   00:30:00Z and 01:30:00Z (02:30 twice)
//
// The fixed-time job runs once on each of those days, like every other day;
// the elapsed-time job runs once every real hour, 23 times on the short day
// and 25 times on the long one.
//
// # Choosing the DST rule
//
// A fixed-time schedule may choose another rule with WithDST, in two
// parts. Gap: GapShift (the default) fires a skipped wall time when the gap
// ends; GapSkip gives it no slot that day. Repeat: RepeatFirst (the
// default) fires a repeated wall time at its first occurrence only;
// RepeatBoth fires it at both. GapSkip with RepeatBoth is the elapsed-time
// rule applied to the schedule's wall times. Wall times that land on the
// same instant still give one slot, and a wall time that is itself the end
// of the gap (03:00 above) fires under GapSkip too, as it does exist.
// Elapsed-time and @every schedules follow real time and take no rule.
//
// For "30 2 * * *" in Europe/Berlin:
//
//	rule                     2026-03-29 (spring forward)       2026-10-25 (fall back)
//	GapShift, RepeatFirst    01:00:00Z (03:00 CEST, gap end)   00:30:00Z (02:30 CEST)
//	GapSkip,  RepeatFirst    none                              00:30:00Z (02:30 CEST)
//	GapShift, RepeatBoth     01:00:00Z (03:00 CEST, gap end)   00:30:00Z and 01:30:00Z (02:30 CEST, CET)
//	GapSkip,  RepeatBoth     none                              00:30:00Z and 01:30:00Z (02:30 CEST, CET)
//
// On every other day each rule fires once, at 02:30.
//
// # Limits
//
// Next and Prev look 5 years ahead or back and return the zero Time if no
// slot is found there (for example "0 0 30 2 *", which never matches). Zone
// rules come from the host's (or the embedded) tz database; replicas with
// different tz data can disagree about slots near a changed rule.
package schedule
