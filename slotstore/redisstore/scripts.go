package redisstore

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// script is a Lua script of this package, run by its SHA-1 digest.
type script struct {
	name string
	src  string // the prelude and the script's own text
	sha  string
}

var (
	claimScript   = load("claim")
	renewScript   = load("renew")
	finishScript  = load("finish")
	releaseScript = load("release")
	historyScript = load("history")
	pruneScript   = load("prune")

	allScripts = []*script{claimScript, renewScript, finishScript, releaseScript, historyScript, pruneScript}
)

func load(name string) *script {
	prelude, err := scriptFiles.ReadFile("scripts/prelude.lua")
	if err != nil {
		panic(err)
	}
	body, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := string(prelude) + "\n" + string(body)
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

// run runs one script in one round trip (two if the server lacks it).
func (s *Store) run(ctx context.Context, c call) (any, error) {
	return s.runAll(ctx, []call{c})[0].Result()
}

// runAll runs calls in one pipeline, and those the server answered NOSCRIPT
// again by their text, and returns one command per call. extra commands
// ride along in the first pipeline; their errors are theirs to check.
func (s *Store) runAll(ctx context.Context, calls []call, extra ...redis.Cmder) []onceCmd {
	if len(calls) == 1 && len(extra) == 0 {
		cmd := calls[0].cmd(ctx, true)
		if err := s.client.Process(ctx, cmd); isNoScript(err) {
			cmd = calls[0].cmd(ctx, false)
			_ = s.client.Process(ctx, cmd)
		}
		return []onceCmd{cmd}
	}
	cmds := make([]onceCmd, len(calls))
	pipe := s.client.Pipeline()
	for i, c := range calls {
		cmds[i] = c.cmd(ctx, true)
		_ = pipe.Process(ctx, cmds[i])
	}
	for _, e := range extra {
		_ = pipe.Process(ctx, e)
	}
	_, _ = pipe.Exec(ctx)
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds
	}
	pipe = s.client.Pipeline()
	for _, i := range again {
		cmds[i] = calls[i].cmd(ctx, false)
		_ = pipe.Process(ctx, cmds[i])
	}
	_, _ = pipe.Exec(ctx)
	return cmds
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
