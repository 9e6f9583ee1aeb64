// Command tenants is a service as a user of slotcron writes it, outside
// slotcron's module: a digest per tenant, each on the minute and second and
// in the time zone its tenant chose, created through the Go API as data and
// run by however many replicas of this binary are started.
//
//	tenants create -n 10000 -seed 1 --config tenants.yaml   # the tenants' schedules
//	tenants run --config tenants.yaml                      # a replica (scheduler.Main)
//	tenants check -from T1 -to T2 --config tenants.yaml    # every due slot ran once?
//
// The digest job records each run — schedule, slot, fence, replica — in the
// service's own table, digests, of the Postgres the configuration's store
// names, as a plain insert: a slot run twice shows as two rows. check
// computes each tenant's due slots by itself (each second of the window
// read in the tenant's zone), not with slotcron's schedule code.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/postgres"
)

// zones are the tenants' zones: whole, half and quarter hours from UTC, on
// both sides, with and without summer time.
var zones = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Adelaide",
	"America/St_Johns", "Pacific/Chatham", "Asia/Tokyo", "America/Sao_Paulo"}

func main() {
	reg := jobs.NewRegistry()
	var db *pgxpool.Pool
	reg.Register("digest", func(ctx context.Context, run jobs.Run) error {
		_, err := db.Exec(ctx, `INSERT INTO digests (schedule, slot, fence, replica) VALUES ($1, $2, $3, $4)`,
			run.Job, run.Slot, run.Fence, run.Replica)
		return err
	})
	if len(os.Args) > 1 && (os.Args[1] == "create" || os.Args[1] == "check") {
		if err := tool(os.Args[1], os.Args[2:], reg); err != nil {
			fmt.Fprintln(os.Stderr, "tenants:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if db, err = pgxpool.New(context.Background(), os.Getenv("DATABASE_URL")); err != nil {
		fmt.Fprintln(os.Stderr, "tenants:", err)
		os.Exit(1)
	}
	scheduler.Main(reg)
}

// tool runs create or check.
func tool(cmd string, args []string, reg *jobs.Registry) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	config := fs.String("config", "tenants.yaml", "the configuration file")
	n := fs.Int("n", 10000, "create: how many tenants")
	seed := fs.Uint64("seed", 1, "create: the seed of their minutes, seconds and zones")
	from := fs.String("from", "", "check: the first instant of the window, RFC 3339")
	to := fs.String("to", "", "check: the last instant of the window, RFC 3339")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	cfg, err := scheduler.LoadAndValidate(*config, reg)
	if err != nil {
		return err
	}
	db, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := scheduler.OpenSchedules(ctx, cfg, reg)
	if err != nil {
		return err
	}
	defer s.Close()
	if cmd == "create" {
		return create(ctx, s, db, *n, *seed)
	}
	t1, err1 := time.Parse(time.RFC3339, *from)
	t2, err2 := time.Parse(time.RFC3339, *to)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("check: -from and -to must be RFC 3339 instants")
	}
	return check(ctx, s, db, t1, t2)
}

// create puts n tenants' schedules: tenant-NNNNN, at a random minute and
// second of every hour in a random zone, with the tenant in its params.
func create(ctx context.Context, s *scheduler.Schedules, db *pgxpool.Pool, n int, seed uint64) error {
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS digests (schedule text, slot timestamptz, fence bigint, replica text)`); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	scs := make([]scheduler.Schedule, n)
	for i := range scs {
		params, _ := json.Marshal(map[string]int{"tenant": i})
		scs[i] = scheduler.Schedule{ID: fmt.Sprintf("tenant-%05d", i), Job: "digest",
			Schedule: fmt.Sprintf("%d %d * * * *", rng.IntN(60), rng.IntN(60)), Params: params,
			Policy: scheduler.Policy{Timezone: zones[rng.IntN(len(zones))]}}
	}
	start := time.Now()
	res, err := s.PutAll(ctx, scs)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	fmt.Printf("created %d schedules in %v\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}
