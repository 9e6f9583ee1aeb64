-- Records the outcome of a running slot held under the presented fence. A
-- slot already done under that fence is left as it is: the retry of a
-- Finish whose reply was lost succeeds.
-- KEYS: the marker, the job's expiry index and running index.
-- ARGV: fence, outcome, error, duration (ns), slot.
-- Reply: 1, or 0 when the fence is not the running claim's (nothing changed).
local m = redis.call('HMGET', KEYS[1], 's', 'f', 'k')
if m[2] ~= ARGV[1] then
  return 0
end
if m[1] == 'done' then
  return 1
end
if m[1] ~= 'running' then
  return 0
end
local now = clock()
redis.call('HSET', KEYS[1], 's', 'done', 'o', ARGV[2], 'e', ARGV[3], 'd', ARGV[4],
  'fa', int(now), 'l', int(now))
redis.call('ZREM', KEYS[3], ARGV[5])
expire(KEYS[1], KEYS[2], ARGV[5], math.max(tonumber(m[3]), now))
return 1
