// Package scheduler runs exactly-once cron jobs across the replicas of a
// service: the configuration (Config, Load, Validate), the replica (New,
// Run, Trigger, with the options WithStore, WithElector, WithLogger,
// WithClock and WithRegistry) and the command line that Main gives a user's
// binary.
//
// A job is a jobs.Func registered under a name in a jobs.Registry; the YAML
// configuration gives each job its schedule and policies (package policy
// holds their values as typed constants). Every replica computes the same
// nominal slots; each slot is claimed in the store (package slotstore), and
// the one replica that wins it runs the job under a renewed lease and a
// fencing token (jobs.Run.Fence). The guarantees are one numbered list, in
// the README; what a store makes true of them is stated in package
// slotstore's documentation, under the same numbers.
//
// Inside, the package is a facade over three wings under internal/: engine
// (the timer loop, claims, runs, leases, duties, metrics), admin (the HTTP
// API and dashboard, which talk to the engine through a small interface)
// and backend (which opens the configured store and the elector that follows
// it).
//
// # Store kinds
//
// A binary links the store kinds it imports, and pays for no other: package
// scheduler links sqlite, the embedded default, and memory; the redis,
// postgres and etcd kinds are linked by importing scheduler/redis,
// scheduler/postgres and scheduler/etcd for their side effect, as
// database/sql drivers are. A service on Postgres links pgx and no gRPC,
// etcd client or go-redis (package fence, whose helpers cover Postgres and
// Redis resources, links both clients). A configuration that names a kind its binary
// does not link is an error at store.kind naming the import to add.
// StoreConfig says how a kind is configured, in YAML and in Go; package
// storekind how a kind registers.
package scheduler
