package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/slotcron/slotcron/slotstore"
)

var _ slotstore.Store = (*Store)(nil)

// maxConns bounds the connections one Store opens. Writes take one at a
// time; the rest serve History.
const maxConns = 4

// Store is a slotstore.Store kept in one SQLite file. It is safe for
// concurrent use by many goroutines, and several Stores, in one process or
// many, may share one file. Its zero value is not usable; call Open.
type Store struct {
	// mu guards db and file: follow replaces them, with mu held, while
	// reads hold it shared for as long as they use db.
	mu     sync.RWMutex
	db     *sql.DB
	file   os.FileInfo // the file db has open, to notice it deleted or replaced
	path   string
	busy   time.Duration
	now    func() time.Time
	writes chan struct{} // a token per write, so this Store's writes queue here, not on the file lock
	closed atomic.Bool

	// beforeCommit, when set, runs just before a claim batch commits. Tests
	// use it to cancel a claim during its commit.
	beforeCommit func()
}

// Open opens the store in the SQLite file o.Path names, creating the file
// and its schema if needed and migrating an older schema. Options that
// Validate refuses are an error wrapping slotstore.ErrInvalid and
// Validate's error. It fails if the file holds a schema newer than this
// package knows or cannot use write-ahead logging.
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("sqlitestore: options: %w: %w", slotstore.ErrInvalid, err)
	}
	o = o.withDefaults()
	s := &Store{path: o.Path, busy: o.BusyTimeout, now: o.Clock, writes: make(chan struct{}, 1)}
	db, file, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	s.db, s.file = db, file
	return s, nil
}

// open opens the file at s.path, creating and migrating it as needed, and
// returns it with the identity of the file it opened.
func (s *Store) open(ctx context.Context) (*sql.DB, os.FileInfo, error) {
	db, err := sql.Open("sqlite", dsn(s.path, s.busy))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlitestore: open %s: %w", s.path, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if err := s.migrate(ctx, db); err != nil {
		db.Close()
		return nil, nil, err
	}
	file, err := os.Stat(s.path)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("sqlitestore: open %s: %w", s.path, err)
	}
	return db, file, nil
}

// conn returns the database the store uses now. Writers call it during
// their write turn, when follow cannot run; readers go through read.
func (s *Store) conn() *sql.DB {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db
}

// read returns the database for a read and a func that ends the read;
// the database stays open until then. If the file at the path is no longer
// the one the store has open, it follows it first, as a write would.
func (s *Store) read(ctx context.Context, op string) (*sql.DB, func(), error) {
	if s.changed() {
		done, err := s.begin(ctx, op) // follows the path
		if err != nil {
			return nil, nil, err
		}
		done()
	}
	s.mu.RLock()
	return s.db, s.mu.RUnlock, nil
}

// changed reports whether the file at the path may not be the one the
// store has open.
func (s *Store) changed() bool {
	cur, err := os.Stat(s.path)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return err != nil || !os.SameFile(cur, s.file)
}

// follow notices that the file at s.path is no longer the one the store
// has open — deleted, replaced by a new file or by an older copy — and
// moves to the file now at the path (creating it if there is none), where
// it begins every job's generation anew: what the file holds may be older
// than what this store knew, so no slot older than now may get a first
// marker in it (slotstore.Generation). Without this, a store would go on
// writing to a file no other process opens any more, and two processes
// could each win the same slot. It runs during the caller's write turn.
func (s *Store) follow(ctx context.Context) error {
	cur, err := os.Stat(s.path)
	switch {
	case err == nil && os.SameFile(cur, s.file):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		// Not a sign of a replaced file (permissions, I/O): fail the call
		// rather than begin new generations for nothing.
		return fmt.Errorf("stat %s: %w", s.path, err)
	}
	db, file, err := s.open(ctx)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, rebirth, s.clock().UnixMilli()); err != nil {
		db.Close()
		return s.fail("open "+s.path+": begin new generations", err)
	}
	s.mu.Lock()
	old := s.db
	s.db, s.file = db, file
	s.mu.Unlock()
	old.Close()
	return nil
}

// rebirth begins the generation of every job the file knows anew at ?1.
const rebirth = `UPDATE generations SET born = max(born, ?1)`

// dsn names the file and the settings every connection starts with. WAL lets
// readers run beside the one writer; synchronous FULL syncs the log at every
// commit, so a fence once returned is never issued again after a power loss;
// _txlock=immediate makes every transaction take the write lock when it
// begins, so two claim batches never both read a marker and then conflict.
func dsn(path string, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return path + "?" + q.Encode()
}

// Close closes the store's connections. It is safe to call more than once;
// calls after the first return nil, and every other method returns an error
// wrapping slotstore.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.conn().Close(); err != nil {
		return fmt.Errorf("sqlitestore: close %s: %w", s.path, err)
	}
	return nil
}

// clock returns the store's time, to the millisecond it is stored with.
func (s *Store) clock() time.Time { return fromMillis(s.now().UnixMilli()) }

// begin checks that the store is open and waits for this Store's turn to
// write. The returned func ends the turn.
func (s *Store) begin(ctx context.Context, op string) (func(), error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("sqlitestore: %s: %w", op, slotstore.ErrClosed)
	}
	select {
	case s.writes <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("sqlitestore: %s: waiting to write: %w", op, ctx.Err())
	}
	if err := s.follow(ctx); err != nil {
		<-s.writes
		return nil, fmt.Errorf("sqlitestore: %s: the file was deleted or replaced: %w", op, err)
	}
	return func() { <-s.writes }, nil
}
