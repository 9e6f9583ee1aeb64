-- Ends a running claim held under the presented fence without an outcome.
-- KEYS: the marker, the job's expiry index and running index.
-- ARGV: fence, slot, the store's live index ('' for none).
-- Reply: 1, or 0 when the fence is not the running claim's (nothing changed).
local m = redis.call('HMGET', KEYS[1], 's', 'f', 'k')
if m[1] ~= 'running' or m[2] ~= ARGV[1] then
  return 0
end
local now = clock()
redis.call('HSET', KEYS[1], 's', 'released', 'l', int(now))
redis.call('ZREM', KEYS[3], ARGV[2])
if ARGV[3] ~= '' then
  redis.call('ZREM', ARGV[3], liveMember(KEYS[1], ARGV[2]))
end
expire(KEYS[1], KEYS[2], ARGV[2], math.max(tonumber(m[3]), now))
return 1
