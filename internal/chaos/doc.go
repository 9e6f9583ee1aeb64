// Package chaos tries hard to break slotcron and counts what broke.
//
// A session starts 3 to 5 real replica processes of a program that
// registers its jobs as a user would (ReplicaMain: a registry and
// scheduler.Main), on SQLite, Redis, Postgres or a 3-member etcd cluster,
// and inflicts faults on a schedule drawn from one seed:
//
//   - kill: SIGKILL, preferring a replica that holds a slot mid-run; the
//     replica is restarted 1-3 s later;
//   - stop: SIGSTOP for 0.5-3 leases, then SIGCONT;
//   - effect-kill, effect-stop: the holder kills or freezes itself right
//     after its effect committed and before its slot is recorded finished
//     (commit-then-crash);
//   - tx-stop (Postgres): the holder freezes inside its CompleteTx
//     transaction, after CompleteTx and before the commit, holding the
//     slot's row;
//   - cut, blackhole, delay: of one replica's connection to the store,
//     through a TCP proxy per replica;
//   - redis-restart (a Redis without persistence comes back empty),
//     redis-flush (FLUSHALL), pg-crash (immediate shutdown and restart);
//   - clock: one replica's clock off by ±1 min or by more than
//     starting_deadline, then back (scheduler.WithClock, set through a file
//     only the replica program reads).
//
// On etcd the replicas reach every member directly (their client fails
// over between them), with no proxy and so no connection faults, and the
// cluster fails beside them on a fixed cadence, one member at a time so a
// quorum always stands:
//
//   - etcd-leader-kill: every 20 s the member leading then is killed
//     (SIGKILL) and restarted 1-3 s later, healthy again before the next
//     fault of the cluster;
//   - etcd-freeze: after the first kill and every third one (so once a
//     minute), one member is frozen (SIGSTOP) for 10 s midway between two
//     kills.
//
// Neither takes the store away: no lost slot is excused by them. And on
// etcd no replica is taken out between its effect and the record of its
// slot finished, where a re-execution is legitimate and the stale-only
// fence check lets it through: the session holds that check to no
// duplicate there. Its replica faults are kill and stop of a replica that
// holds nothing (frozen first, and resumed untouched if its log shows it
// holds a run), clock, and:
//
//   - run-kill: a holder freezes itself at its point before effect, after
//     its work and before any effect, and is killed there, unless another
//     run of the process has written an effect it has not recorded
//     (then it is resumed at once);
//   - run-stop: the same, frozen there for 0.5-3 leases and then until a
//     successor has written the slot's effect through the fence check, so
//     its late write, when it resumes, meets the newer fence and is
//     refused.
//
// The jobs: tick (every second, 50-300 ms of work that ignores
// cancellation, so a stale holder writes late), slow (every 5 s, 3 s of
// work that honours its context), minute (every minute, 1-2 s), and on
// Postgres ledger (every second, its row and the slot's completion in one
// CompleteTx transaction); and two schedules held as data, put through the
// Go API before the replicas start and again after each loss of the
// store's data, as a service writes its tenants' schedules: tenant-tick
// (every 2 s, as tick) and tenant-slow (every 5 s, 2 s honouring its
// context). Each work job writes its effect three ways to a
// Postgres database the checker owns and the faults never touch: through
// the once-per-slot helper (fence.OncePG), through the stale-only fence
// check (fence.CheckPG on the run key), and unfenced; every start is
// recorded too.
//
// # The checker
//
// After the faults the replicas settle, are stopped with SIGTERM (a clean
// exit is expected), and the checker reads the effects, the store's markers
// (sampled every second during the session, so a store that lost its data
// cannot hide what it held) and every replica's log. It reports per store:
// slots due, slots with exactly one effect, duplicate effects per write
// style, lost slots (each with its marker's state and reason, what the
// replicas logged, and the nearest fault), re-executions, takeover latency
// against the lease the holder had left, fence refusals, and every breach
// below.
//
// A session fails on: a duplicate effect through the once-per-slot helper
// or CompleteTx, and on etcd through the stale-only fence check too; a
// lost slot not excused by the store losing its data or being down around
// it (or, on SQLite, by a frozen replica holding the file's lock through
// the slot's window; never, on etcd, by a fault of one member); a slot started again after it
// was seen done (guarantee 3); attempts of a slot whose fences did not grow
// (2); a takeover before the holder's lease ended (1) or, with
// Options.LatencyBound, a takeover p99 later than one renewal interval past
// it; a killed holder's slot nobody took over (4); work that honours
// cancellation still at work after its successor started, unless its
// process was frozen (5); a slot recorded missed before its window closed
// by the store's clock (7); a replica that exited on its own, did not stop
// cleanly, panicked or (under -race) raced. Duplicates in the unfenced
// style, and elsewhere than on etcd in the fenced one, are expected: they
// show what those styles do not cover.
//
// Every random choice of the fault schedule is drawn from the seed on one
// goroutine; which replica a fault hits depends on which are healthy then,
// so a replay is close to the original, not identical.
//
// Sessions run as tests: make chaos (TestChaos, every store, minutes
// each) and a short TestChaosSmoke on Redis in make test. A failure prints
// the seed and the command that replays it.
package chaos
