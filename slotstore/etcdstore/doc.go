// Package etcdstore is a slotstore.Store kept in etcd (v3 API), through
// go.etcd.io/etcd/client/v3: markers replicated by the cluster's quorum,
// fences from its revisions.
//
//	s, err := etcdstore.Open(ctx, etcdstore.Options{
//		Endpoints: []string{"http://etcd-0:2379", "http://etcd-1:2379", "http://etcd-2:2379"},
//	})
//
// Open makes its own client and closes it in Close; New takes one the
// caller configured and still owns (slotstore's package documentation,
// under Constructors).
// Either checks that the cluster answers, grants the store's process lease
// (below) and keeps it alive until Close.
//
// # Keys
//
// Every key starts with Options.Prefix (default "slotcron/", always ending
// with "/"). A job's or replica's name is written with every byte but ASCII
// letters, digits, '-', '.' and '_' as %XX, so it holds no '/' and the keys
// of one job are a range no other job's keys fall in. A slot is written as
// its run key writes it, 2026-11-29T02:00:00Z: fixed width for the years
// 0001 to 9999 (a claim of a slot outside them is ErrInvalid), so a job's
// keys sort by slot. Values are JSON.
//
//	cluster                 the ID of the etcd cluster the keys were written in
//	gen/<job>               the job's generation: when it was born
//	jobs/<job>              empty; every job that has had a marker, for History and Prune
//	m/<job>/<slot>          the slot's marker
//	run/<job>/<slot>        a copy of the marker while it is running: the job's
//	                        running slots, for the overlap policies and History
//	hold/<job>/<slot>       the holder key, under the holder's process lease,
//	                        while the slot runs (WatchHolder)
//	pause/all               the pause of the whole cluster, with its note
//	pause/job/<job>         a job's pause, with its note
//	beat/<replica>          the replica's last beat
//	cat/<job>               the job's catalog entry: its spec in force, carriers
//	                        and past specs, and a schedule's run, version, seq
//	                        and deleted mark (rules.EntryJSON)
//	spec/<job>              the fingerprint of the job's spec in force, alone
//	sched/<id>              empty; every schedule held as data ever written, its
//	                        ModRevision the Seq of its last write
//	sched-live/<id>         empty; each live schedule
//	sched-run/<run>/<id>    empty; each live schedule, by the job it runs
//	sched-head              empty; its ModRevision is the newest schedule write's
//	act/<seq>               an entry of the actions log, seq zero-padded to 19 digits
//	act-exp/<until>/<seq>   empty; each entry by its expiry (At + Retain, Unix ms,
//	                        zero-padded), for Prune
//	act-head                the last Seq of the actions log
//
// The schedule indexes hold a schedule's ID as it is, not escaped (an ID
// is printable ASCII), so that their keys sort as the IDs do and a prefix
// of IDs is a range of keys; only the run is escaped.
//
// Nothing deletes a generation, a job key, a catalog or spec key, a sched/
// key or the cluster record; Prune deletes markers, with their running
// copy and holder key, old beats, and the entries of the actions log
// past their retention with their act-exp/ keys; a schedule's delete deletes its
// sched-live/ and sched-run/ keys, and a put that changes its run its old
// sched-run/ key.
// The store reads and writes no other key, so others may share the prefix:
// leader/etcdleader keeps its terms under leader/ and leader-holder/.
//
// # The actions log
//
// AppendAction reads act-head, then commits one transaction that puts
// act-head, the entry and its expiry key if act-head's ModRevision is still
// the one read: appends take effect one at a time, in Seq order, and a
// reader that lists an entry has every entry below it to list. Appends that
// race retry, the transaction's else branch reading act-head again, after
// a random pause, up to 64 times (ErrConflict): one round trip an append
// alone, a few under contention. At is the store's clock (below), read
// before each try, to the millisecond. Actions reads the oldest entry's
// key and act-head in one read, then ranges of act/ keys back from
// Before, Limit seqs at a time without filters and 500 with, newest
// first, filtering in the client, until it has Limit entries or passes
// the oldest: O(Limit) keys a page when the filters pass most entries, up
// to every entry below Before when they pass few. Prune reads the act-exp/
// keys before the store's clock and deletes them with their entries, a
// transaction per page. Every entry stays in etcd's keyspace, a few
// hundred bytes more than its text, until Prune deletes it: a log kept
// for years at a high rate takes from etcd's quota.
//
// # The clock
//
// etcd has no clock a client can read through its API: its leases count
// whole seconds on the leader, and it has no TIME. The contract's leases
// are per slot with millisecond precision (and Renew extends one slot's).
// So the store reads the members' own clock another way: every member
// answers HTTP at its client URL, and Go's HTTP server stamps each answer
// with a Date header in whole seconds. Open probes /version until that
// header turns to the next second, which places the members' second
// boundary on this process's monotonic clock to within the probes' round
// trip (package netclock); from then on the store's clock is the members'
// time carried forward by the monotonic clock, measured again every five
// minutes. So every replica judges leases, NotBefore, retries and
// generations, and stamps every time a marker records, by one clock, the
// members', whatever its own host's wall clock says or however it steps,
// as Redis's and Postgres's stores judge by their server's clock. The
// members must agree among themselves (they are servers: NTP), and the
// measurement errs by up to half a round trip to a member plus the probe
// interval, a few milliseconds on a local network. Options.ClockSource
// "local" uses the process's wall clock instead, as sqlitestore does, for
// members whose client URLs cannot be reached over HTTP(S); the replicas'
// clocks must then agree (NTP). Either way a holder stops trusting its
// lease by its own monotonic clock (guarantee 5), and fences are what make
// a late holder harmless.
//
// Beside the slots' leases, each Store holds one etcd lease for its
// process, of Options.LeaseTTL (default 20 s), kept alive by the client,
// and puts the holder key of every slot it wins under it. When the process
// dies, or is cut off from the cluster's quorum for the TTL, the cluster
// deletes those keys by its own clock, and a replica waiting for one of the
// slots learns of it from a watch (WatchHolder), without polling. The
// process lease only wakes waiters early: a slot's lease still ends when
// its marker says. Close never revokes it; it expires. A store whose
// lease expired (it was cut off) grants a new one, and its next renewal of
// each slot it holds puts the slot's holder key back.
//
// # Fences are revisions
//
// A winning claim's fence is the revision of the transaction that commits
// it, plus the prefix's fence base: etcd's revisions grow with every write
// across the whole cluster, are never reused after a leader change or a
// member's restart, and survive the loss of any minority of members, so
// fences grow per job in claim order. The fence base is the store's clock
// in microseconds when the prefix's cluster record was written (the first
// store to open on the prefix in this cluster writes it): a cluster that
// replaces another, restored from a snapshot or new and empty, its
// revisions starting again from where the snapshot or 1 left them, gets a
// new record and a new base, above every fence issued before (revisions
// grow far slower than one a microsecond). A value cannot hold the
// revision it is written at, so a won marker is written with no fence,
// meaning "the fence is the base plus this key's ModRevision", and the
// next write of the marker (a renewal, a finish, a takeover) writes the
// fence out. One transaction has one revision, so no transaction commits
// two claims of one job that take a fence. The elector of package
// leader/etcdleader adds the same base to its terms' revisions.
//
// # Transactions
//
// Every decision reads linearizably (the client's default; never a
// serializable read) and every write is a transaction whose compares cover
// everything the decision read: the ModRevision of each key, and for a
// job's running slots, that no key of the range changed or appeared since
// it was read. A transaction whose compares fail writes nothing; its Else
// branch reads back what they covered, and the decisions are made again,
// up to 64 times a call before it fails with ErrConflict.
//
// Claim and Skip decide their batch in order by slotstore's decision table
// in Go, each request seeing the changes of those before it, and commit
// consecutive requests together, in as few transactions as the limits
// allow: at most one claim of a job that takes a fence, at most
// Options.MaxTxnOps compares, writes and reads (etcd's --max-txn-ops,
// 128 by default), at most 1 MiB of keys and values (below etcd's default
// request limit of 1.5 MiB). A batch of many slots of one job therefore
// takes a transaction per slot won; slots of different jobs share them.
// A batch of more than one request first reads the keys of up to MaxTxnOps
// of them in one round trip; a batch of one assumes the slot has no
// marker and that the job's generation is as the store last saw it, and
// its transaction checks both. So the claim of a slot nobody claimed yet
// is one round trip, and so is a losing claim: its transaction's compares
// fail, its Else reads back the marker it lost to, and the decision made
// again from it writes nothing, so it needs no other. A batch of n new
// slots of one job is one read per MaxTxnOps requests and one transaction
// per slot.
//
// Renew, Finish and Release are one transaction each, comparing the
// marker's ModRevision with the one they decided on, so the fence check is
// atomic with the write; the store remembers the markers it won and
// renewed, so for a slot it holds that is the only round trip. Enroll is
// one read per MaxTxnOps/3 jobs (MaxTxnOps/4 with specs) and, when some
// generations are missing or some specs change the catalog, a transaction
// that begins them and applies the specs. History of a job reads the newest keys of
// its range; of every job, a read of the job keys, then of each job's range, MaxTxnOps jobs a transaction,
// merged; running markers come from their copies. Prune reads each job's
// markers a page at a time and deletes each marker it may in a nested
// transaction comparing its ModRevision, so a marker changed since the
// read is kept.
//
// The catalog (The catalog in slotstore's package documentation) is two
// keys per job: cat/<job>, the entry, which every enrolment with a spec
// writes (its carrier's time), and spec/<job>, the fingerprint in force,
// written with it only when that changes. An enrolment reads both with
// the generation, decides by rules.Offer in Go and writes in the
// transaction that begins the generation, whose compares cover both, as
// they cover every key a decision read. A claim or skip naming a spec
// reads spec/<job> alone, before anything else, and a refused one reads
// and writes nothing more; the store caches spec keys as it does
// generations, and the transaction compares the cached key like any
// other, so a claim under a spec replaced since is one round trip, like a
// claim under the spec in force, and a request naming no spec costs
// nothing more. An old build, which knows neither key, enrolls and claims
// as before, naming no spec. Catalog lists the cat/ keys (keys only) unless
// it is given jobs, then reads the page's entries, MaxTxnOps a
// transaction.
//
// Schedules held as data (slotstore's Schedules held as data) are
// catalog entries with an index beside them. WriteSchedules decides each
// write in Go by rules.ApplyWrite against the schedule's entry, spec key
// and generation, read first (one read for up to MaxTxnOps writes), and
// commits each write that changes a schedule in a transaction of its own
// whose compares cover those keys; it writes the entry, the spec key, the
// generation when the job has none (a put, as Enroll begins it) and the
// index keys. A write's Seq is the revision of that transaction: etcd's
// revisions grow in commit order across the cluster, so sequence numbers
// grow in the order the writes took effect, and a reader that has read
// the changes up to n (at a revision at least n) never later finds a new
// one at or below it. The entry a schedule write puts holds no seq: its
// Seq is the ModRevision of cat/<id>, the write's revision (a value cannot
// hold the revision it is written at), the same as its sched/ key's; the
// only other write of that key, an enrolment of a deleted schedule's ID,
// writes the Seq out, so it is kept. (An enrolment of a live schedule's
// ID writes nothing.) A delete is such a write too: the deleted entry's
// Seq is the delete's revision. So a batch of n writes that change
// schedules is n transactions, in order, plus a read per MaxTxnOps writes;
// writes that change nothing (an idempotent put, a refused write) share
// those transactions, or cost none when what they read was fresh.
//
// Schedules is one range read of an index (sched-run/<run>/ with a Run,
// else sched-live/), keys only, from the Prefix and after After, limited to
// the page's Limit, then the page's entries at that read's revision,
// MaxTxnOps a transaction: a page of 100 is two round trips whatever the
// number of schedules, and etcd reads only the page's keys. With IDs it
// reads those entries, MaxTxnOps a transaction. ScheduleChanges is one
// transaction that compares the ModRevision of sched-head with After:
// when nothing was written since, it reads that one key and nothing else
// (the poll of a replica that is up to date). Otherwise it also ranges
// over the sched/ keys with a minimum ModRevision, sorted by ModRevision,
// limited to the page, and then reads the page's entries at that
// revision; etcd filters and sorts that range by reading every sched/ key
// on the member (see Limits). A page or feed whose revision is compacted
// before its entries are read is read again.
//
// WatchSchedules watches the sched/ keys (one of which every schedule write
// puts), through the client of every member, requiring a leader. A watch
// that ends (its member lost its leader or went away), or has not
// answered a progress request for 3 s, starts again from the revision
// after the last event it saw, so a leader's death loses no notice; one
// whose revision was compacted meanwhile sends a notice (writes may have
// been missed) and starts again from the newest revision.
//
// During a rolling upgrade, replicas of the previous build enroll by the
// previous rules, which know nothing of schedules held as data: one that
// enrolls a job of its configuration named like a live schedule would put
// its spec in force over it and drop the schedule's fields. Write
// schedules once every replica runs this version.
//
// Pauses are keys kept in a local copy by a watch, so a pause set by any
// replica is seen by the others within milliseconds and Pauses costs no
// round trip; a store's own SetPause is seen by its next Pauses (it reads
// the keys until the copy has caught up).
//
// The error text a marker keeps (FinishParams.Error) is cut to 64 KiB, so
// a finish always fits in a request.
//
// # Failures
//
// A member that fails or stops answering is left for the others. The
// store sends its requests to one member at a time, through a client of
// that member alone, and moves to the next when one leaves a request
// unanswered or has no leader, passing it over for 10 s: a frozen member,
// whose connection gRPC's keepalive drops only after 10 s or more, costs a
// store one request's timeout rather than one request in three. A request
// goes only to a member that has a leader (clientv3.WithRequireLeader),
// and each is bounded by Options.RequestTimeout and the caller's context.
// Watches and the process lease's keepalive use a client of every member. Reads
// are retried on another member. Renew, Finish and Release are sent again
// when a request goes unanswered (a timeout, a connection lost after
// sending, a leader that failed while the proposal was in flight: etcd
// stalls proposals for an election) with the same compare, so one that
// landed makes the next fail and is seen in the marker its Else reads
// back: a renewal or finish whose slot's lease is short outlives a leader's
// death or a frozen member. A claim or skip is sent again only when etcd
// refused it before proposing it (no leader yet, the process lease gone);
// one whose reply is lost returns an error wrapping
// slotstore.ErrOutcomeUnknown, as does a batch that fails after one of its
// transactions committed, and a Renew, Finish or Release whose context
// ends while one of its requests is unanswered; see Failures in slotstore's package
// documentation. After Close every method returns an error wrapping
// slotstore.ErrClosed.
//
// What survives: the loss of any minority of members, a killed leader (a
// new one is elected within an election timeout, and the calls in flight
// on the old one end as unknown outcomes), a member frozen or partitioned
// (its requests time out, the others serve), a member restarted, which
// rejoins with its data.
//
// # Generations and lost data
//
// A job's generation (slotstore.Generation) is the key gen/<job>, begun by
// Enroll or by the first claim of the job, in the transaction that decides
// the claim, and never deleted by the store. Its absence is the store's
// sign that it lost the job's keys: every key under the prefix deleted, or
// the prefix (or the cluster) replaced by an empty one. The next claim or
// enrollment then begins a new generation: slots before it that have no
// marker are skipped for data loss, never run again.
//
// The record cluster holds the ID of the cluster the keys were written
// in. When Open finds the record of another cluster, the keys came from
// elsewhere, most likely a snapshot restored into a new cluster
// (etcdutl snapshot restore with a new --initial-cluster or token): it
// deletes every generation, in the transaction that records the new
// cluster, so the slots after the snapshot are skipped rather than run
// again, and markers the snapshot holds as running are abandoned once
// their lease ends, never taken over. What it does not detect: a snapshot
// restored with the cluster's old membership and token (the cluster ID is
// then the same), and a restore into the cluster a store is already open
// on (it checks at Open only). After such a restore, delete the keys under
// <prefix>gen/ by hand before the replicas start.
//
// A restore also takes revisions back to the snapshot's; a restore the
// store detects (a new cluster ID) gets a new fence base, so fences keep
// growing. After one it does not detect, restore with etcdutl snapshot
// restore --bump-revision, by more revisions than the cluster wrote since
// the snapshot, and --mark-compacted, or delete the cluster record under
// the prefix (with the generations) before the replicas start.
//
// Schedules' sequence numbers are revisions too, without the fence base
// (Head is sched-head's ModRevision): after a restore or a new cluster,
// the Head falls below the cursors of the replicas that follow the feed,
// which then read every schedule again, as the contract says of a store
// that lost what it had. Restore with --bump-revision, as above, so that
// revisions stay above every Seq read before.
//
// # Limits
//
// A replace claim's transaction holds its own writes and those of every
// running slot it supersedes (three operations each); a job with more
// running slots than MaxTxnOps allows fails the claim with ErrTooLarge.
// A marker whose retention ends while it is running is pruned once its
// lease has ended: keep the retention (the history setting) longer than
// the longest run. History with a state other than running reads the
// job's markers a page at a time until it has enough, and of every job,
// each job's in turn.
//
// The store is not meant for a million schedules held as data: etcd keeps
// its whole keyspace in memory and its database is bounded (2 GiB by
// default, --quota-backend-bytes), and each schedule is five keys (its
// entry, with up to 32 past specs of up to 16 KiB each, its spec key and
// three index keys) plus its generation. Schedules pages stay bounded
// reads at any number. A ScheduleChanges call that finds changes costs
// etcd a read of every sched/ key (every schedule ever written, deleted
// ones included; they are small and empty), to filter and sort them by
// ModRevision: under a millisecond per thousand schedules on a local
// cluster (3.4 ms with 5,000, against 0.4 ms for the poll that finds
// none, which stays one key at any number), so fine for tens of
// thousands, not for millions. A
// WriteSchedules batch is a transaction per changed schedule: 1,000 new
// schedules take about 1,000 round trips.
package etcdstore
