package harness

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/testserver"
)

// env owns what a run starts: a temporary directory, a private
// redis-server, a private postgres and a private 3-member etcd cluster,
// each started on first use.
type env struct {
	dir string
	t   *tb

	redis    *testserver.Redis
	redisErr error
	rdb      *redis.Client // for INFO server, beside the stores' own clients

	pg    *testserver.Postgres
	pgErr error
	dsn   string // of the bench database

	etcd    *testserver.EtcdCluster
	etcdErr error
	etcdc   *clientv3.Client // deletes and compacts between measurements

	seq          int           // names fresh stores
	lastWarnings int64         // warnings the last slotcron measurement logged
	lastStop     time.Duration // from cancel to the return of every Run, in the last slotcron measurement
}

func newEnv() (*env, error) {
	dir, err := os.MkdirTemp("", "slotbench-")
	if err != nil {
		return nil, err
	}
	return &env{dir: dir, t: &tb{}}, nil
}

func (e *env) close() {
	if e.rdb != nil {
		e.rdb.Close()
	}
	if e.etcdc != nil {
		e.etcdc.Close()
	}
	e.t.close()
	os.RemoveAll(e.dir)
}

// redisAddr starts the private redis-server on first use.
func (e *env) redisAddr() (string, error) {
	if e.redis == nil && e.redisErr == nil {
		e.redisErr = try(func() { e.redis = testserver.StartRedis(e.t) })
		if e.redisErr == nil {
			e.rdb = redis.NewClient(&redis.Options{Addr: e.redis.Addr()})
		}
	}
	if e.redisErr != nil {
		return "", e.redisErr
	}
	return e.redis.Addr(), nil
}

// pgDSN starts the private postgres on first use and creates the bench
// database in it.
func (e *env) pgDSN() (string, error) {
	if e.pg == nil && e.pgErr == nil {
		e.pgErr = try(func() { e.pg = testserver.StartPostgres(e.t) })
		if e.pgErr == nil {
			e.pgErr = e.pgExec(e.pg.DSN(), "CREATE DATABASE slotbench")
			e.dsn = strings.Replace(e.pg.DSN(), "/postgres?", "/slotbench?", 1)
		}
	}
	if e.pgErr != nil {
		return "", e.pgErr
	}
	return e.dsn, nil
}

func (e *env) pgExec(dsn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// pgTransactions returns xact_commit + xact_rollback of the bench
// database, read from the postgres database so the reading itself does not
// count. Backends report their counts with a delay of up to a second or
// so, and at exit.
func (e *env) pgTransactions(ctx context.Context) (int64, error) {
	c, err := pgx.Connect(ctx, e.pg.DSN())
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int64
	err = c.QueryRow(ctx, `SELECT coalesce(sum(xact_commit + xact_rollback), 0)::bigint
		FROM pg_stat_database WHERE datname = 'slotbench'`).Scan(&n)
	return n, err
}

// versions describes the servers started, for the report's header.
func (e *env) versions() string {
	var parts []string
	if e.rdb != nil {
		if info, err := e.rdb.Info(context.Background(), "server").Result(); err == nil {
			for line := range strings.SplitSeq(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
					parts = append(parts, "redis "+v)
				}
			}
		}
	}
	if e.pg != nil && e.pgErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, e.pg.DSN()); err == nil {
			var v string
			if c.QueryRow(ctx, "SHOW server_version").Scan(&v) == nil {
				parts = append(parts, "postgres "+strings.Fields(v)[0])
			}
			c.Close(context.Background())
		}
	}
	if v := e.etcdVersion(); v != "" {
		parts = append(parts, v)
	}
	return strings.Join(parts, ", ")
}
