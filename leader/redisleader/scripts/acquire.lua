-- Takes the lease of a name if nobody holds it, or if the caller already
-- does (a retried call), issuing a new fence either way.
-- KEYS: the lease hash (h: holder, f: fence; expires by PEXPIRE), the fence
--       counter (no expiry).
-- ARGV: holder, lease (ms).
-- Reply: {1, fence} when won; {0, PTTL of the lease (ms)} when held.
local h = redis.call('HGET', KEYS[1], 'h')
if h and h ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1])}
end
-- The next fence: past the last one and never below Redis's clock in
-- microseconds, so a counter lost with the data restarts above every fence
-- issued before.
local t = redis.call('TIME')
local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = string.format('%d', math.max(tonumber(redis.call('GET', KEYS[2]) or '0') + 1, floor))
redis.call('SET', KEYS[2], f)
redis.call('HSET', KEYS[1], 'h', ARGV[1], 'f', f)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, f}
