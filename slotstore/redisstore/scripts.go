package redisstore

import (
	"cmp"
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// script is a Lua script of this package, run by its SHA-1 digest.
type script struct {
	name string
	src  string // the prelude, its libraries and the script's own text
	sha  string
}

var (
	claimScript   = load("claim")
	renewScript   = load("renew")
	finishScript  = load("finish")
	releaseScript = load("release")
	historyScript = load("history")
	pruneScript   = load("prune")
	enrollScript  = load("enroll")
	catalogScript = load("catalog")
	liveScript    = load("live")

	schedWriteScript = load("schedwrite", "schedlib")
	schedIndexScript = load("schedindex", "schedlib")
	schedStampScript = load("schedstamp")

	pauseScript    = load("pause")
	pausesScript   = load("pauses")
	beatScript     = load("beat")
	replicasScript = load("replicas")

	actionScript      = load("action")
	actionPruneScript = load("actionprune")

	allScripts = []*script{claimScript, renewScript, finishScript, releaseScript, historyScript, pruneScript, enrollScript, catalogScript,
		liveScript, pauseScript, beatScript, replicasScript, schedWriteScript, schedIndexScript, schedStampScript,
		actionScript, actionPruneScript}
)

// load makes the script of scripts/<name>.lua: the prelude, the libraries
// libs (scripts/<lib>.lua) in order, then the script's own text.
func load(name string, libs ...string) *script {
	var src string
	for _, f := range append(append([]string{"prelude"}, libs...), name) {
		text, err := scriptFiles.ReadFile("scripts/" + f + ".lua")
		if err != nil {
			panic(err)
		}
		if src != "" {
			src += "\n"
		}
		src += string(text)
	}
	sum := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// onceCmd is a command that go-redis must never send a second time: a
// script whose reply was lost may have run, and running a claim again would
// answer "held" to the claim that won. go-redis honours NoRetry for single
// commands and pipelines, on every kind of client, whatever its MaxRetries.
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to retry the command.
func (onceCmd) NoRetry() bool { return true }

// call is one run of a script.
type call struct {
	script *script
	keys   []string
	args   []any
}

// cmd builds the EVALSHA of c, or its EVAL when bySHA is false.
func (c call) cmd(ctx context.Context, bySHA bool) onceCmd {
	a := make([]any, 0, 3+len(c.keys)+len(c.args))
	if bySHA {
		a = append(a, "evalsha", c.script.sha)
	} else {
		a = append(a, "eval", c.script.src)
	}
	a = append(a, len(c.keys))
	for _, k := range c.keys {
		a = append(a, k)
	}
	return onceCmd{redis.NewCmd(ctx, append(a, c.args...)...)}
}

// runAll runs calls in one pipeline, and those the server answered NOSCRIPT
// again by their text, and returns one command per call. extra commands
// ride along in the first pipeline; their errors are theirs to check.
func (s *Store) runAll(ctx context.Context, calls []call, extra ...redis.Cmder) []onceCmd {
	cmds, _ := s.exec(ctx, s.client, calls, false, extra...)
	return cmds
}

// conn is what exec sends on: a client whose pipelines go to one server
// on one connection (a *redis.Client), or a ClusterClient when nothing
// needs that.
type conn interface {
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipeline() redis.Pipeliner
}

// exec runs calls on c as runAll does. With wait, each pipeline ends with
// WAIT for s.wait replicas, on the connection that carried the calls, and
// exec returns ErrNotReplicated, wrapped, if a WAIT fell short; c must
// then pipeline to one server.
func (s *Store) exec(ctx context.Context, c conn, calls []call, wait bool, extra ...redis.Cmder) ([]onceCmd, error) {
	cmds := make([]onceCmd, len(calls))
	if len(calls) == 1 && len(extra) == 0 && !wait {
		cmds[0] = calls[0].cmd(ctx, true)
		if err := c.Process(ctx, cmds[0]); isNoScript(err) {
			cmds[0] = calls[0].cmd(ctx, false)
			_ = c.Process(ctx, cmds[0])
		}
		return cmds, nil
	}
	var waitErr error
	send := func(idx []int, bySHA bool, extra []redis.Cmder) {
		pipe := c.Pipeline()
		for _, i := range idx {
			cmds[i] = calls[i].cmd(ctx, bySHA)
			_ = pipe.Process(ctx, cmds[i])
		}
		for _, e := range extra {
			_ = pipe.Process(ctx, e)
		}
		var w *redis.IntCmd
		if wait {
			w = redis.NewIntCmd(ctx, "wait", s.wait, millisUp(s.waitTimeout))
			_ = pipe.Process(ctx, w)
		}
		_, _ = pipe.Exec(ctx)
		if w != nil && waitErr == nil {
			waitErr = s.replicated(w)
		}
	}
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	send(all, true, extra)
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(again, false, nil)
	}
	return cmds, waitErr
}

// replicated checks the reply of a WAIT.
func (s *Store) replicated(w *redis.IntCmd) error {
	n, err := w.Result()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	}
	if n < int64(s.wait) {
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", ErrNotReplicated, n, s.wait, s.waitTimeout)
	}
	return nil
}

// runWaited runs calls as runAll does and, when Options.WaitReplicas asks
// for it, waits until that many replicas have acknowledged their writes,
// returning ErrNotReplicated, wrapped, if they did not in time. On a single
// server (or a Sentinel's master) the WAIT ends the pipeline. In a Cluster
// WAIT has no key, so go-redis would send it to any master, on another
// connection than the calls: the calls are grouped by the master of their
// hash slot, and each group goes, with its WAIT, in a pipeline on a
// connection to that master, all masters at once. extra commands go
// through the Cluster client beside them.
func (s *Store) runWaited(ctx context.Context, calls []call, extra ...redis.Cmder) ([]onceCmd, error) {
	if s.wait == 0 {
		return s.runAll(ctx, calls, extra...), nil
	}
	cc, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return s.exec(ctx, s.client, calls, true, extra...)
	}
	cmds := make([]onceCmd, len(calls))
	var masters []*redis.Client
	groups := map[*redis.Client][]int{}
	for i, c := range calls {
		m, err := cc.MasterForKey(ctx, c.keys[0])
		if err != nil {
			cmds[i] = c.cmd(ctx, true)
			cmds[i].SetErr(fmt.Errorf("%w: find the master of %s: %w", errUnsent, c.keys[0], err))
			continue
		}
		if groups[m] == nil {
			masters = append(masters, m)
		}
		groups[m] = append(groups[m], i)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		waitErr error
	)
	for _, m := range masters {
		idx := groups[m]
		wg.Go(func() {
			part := make([]call, len(idx))
			for j, i := range idx {
				part[j] = calls[i]
			}
			got, err := s.exec(ctx, m, part, true)
			for j, i := range idx {
				cmds[i] = got[j] // each goroutine sets its own elements
			}
			if err != nil {
				mu.Lock()
				waitErr = cmp.Or(waitErr, err)
				mu.Unlock()
			}
		})
	}
	for _, e := range extra {
		wg.Go(func() { _ = cc.Process(ctx, e) })
	}
	wg.Wait()
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && (redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")) {
			// Sent straight to a node, the call skipped the Cluster
			// client's redirections: let it learn the new layout.
			cc.ReloadState(ctx)
			break
		}
	}
	return cmds, waitErr
}

// loadScripts puts every script in the script cache of every server (all
// masters of a Cluster), so the first calls need one round trip. A server
// that loses its cache (a restart, a failover) answers NOSCRIPT, and run
// sends the script's text instead.
func loadScripts(ctx context.Context, c redis.UniversalClient) error {
	for _, sc := range allScripts {
		sha, err := c.ScriptLoad(ctx, sc.src).Result()
		if err != nil {
			return err
		}
		if sha != sc.sha {
			return errors.New("script " + sc.name + ": server digest " + sha + ", want " + sc.sha)
		}
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
