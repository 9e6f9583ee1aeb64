package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A control directory carries the harness's requests to its replicas: a
// fault a replica's job inflicts on itself at a point only the job knows
// (after its work and before its effect; right after its effect committed;
// inside a CompleteTx transaction), and the offset of a replica's clock.
// Each request is one small file, written whole by rename, so a replica
// never reads half of one.
type control struct{ dir string }

// Points at which a job can be asked to fault itself.
const (
	// pointBeforeEffect: the job's work is done (for work that honours
	// its context, before its last look at it), no effect written yet.
	pointBeforeEffect = "before-effect"
	// pointAfterEffect: the job's effects are committed, its slot not yet
	// recorded finished.
	pointAfterEffect = "after-effect"
	// pointInTx: inside the CompleteTx job's transaction, after
	// CompleteTx and before the commit.
	pointInTx = "in-tx"
)

// Actions a job takes on itself at a point.
const (
	actKill = "kill" // SIGKILL
	actStop = "stop" // SIGSTOP; the harness sends SIGCONT later
)

func (c control) file(replica, name string) string {
	return filepath.Join(c.dir, replica+"."+name)
}

// write replaces a file atomically.
func (c control) write(replica, name, content string) error {
	path := c.file(replica, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// acts are the actions a request file can name.
var acts = []string{actKill, actStop}

// arm asks replica to take act at point, once. The action is in the file's
// name, so taking a request needs no read that a harness could race.
func (c control) arm(replica, point, act string) error {
	return os.WriteFile(c.file(replica, point+"."+act), nil, 0o644)
}

// disarm withdraws a request the replica has not taken; it reports whether
// one was still there.
func (c control) disarm(replica, point, act string) bool {
	return os.Remove(c.file(replica, point+"."+act)) == nil
}

// take claims the request at point for replica, if there is one: the rename
// makes it one-shot even when several runs of the replica reach the point
// at once. It returns the action, or "" when none is armed.
func (c control) take(replica, point string) string {
	for _, act := range acts {
		path := c.file(replica, point+"."+act)
		if os.Rename(path, path+".taken") == nil {
			return act
		}
	}
	return ""
}

// taken reports whether replica took the request for act at point since it
// was armed, and clears the record.
func (c control) taken(replica, point, act string) bool {
	return os.Remove(c.file(replica, point+"."+act)+".taken") == nil
}

// setOffset sets replica's clock offset.
func (c control) setOffset(replica string, d time.Duration) error {
	return c.write(replica, "clock", strconv.FormatInt(int64(d), 10))
}

// offset reads replica's clock offset; no file means none.
func (c control) offset(replica string) (time.Duration, error) {
	b, err := os.ReadFile(c.file(replica, "clock"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("chaos: clock offset of %s: %w", replica, err)
	}
	return time.Duration(n), nil
}
