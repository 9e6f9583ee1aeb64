package redisleader

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// Every script is run by EVALSHA, and by EVAL when the server has not seen
// it (go-redis's Script.Run). Each is safe to run twice: a second acquire
// by the same holder wins again with a new fence, a second renew extends
// again, a second release finds nothing to release.
var (
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/renew.lua
	renewSrc string
	//go:embed scripts/release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	renewScript   = redis.NewScript(renewSrc)
	releaseScript = redis.NewScript(releaseSrc)
)
