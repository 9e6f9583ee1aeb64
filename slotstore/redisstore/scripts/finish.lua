-- Records the outcome of a running slot held under the presented fence:
-- done, or retrying until the retry is due. A slot already done or retrying
-- under that fence is left as it is: the retry of a Finish whose reply was
-- lost succeeds.
-- KEYS: the marker, the job's expiry index and running index.
-- ARGV: fence, outcome, error, duration (ns), retry due (Unix ms, '' for
--       none), '1' when the caller waits for replicas, slot, the store's
--       live index ('' for none).
-- Reply: 1, or 0 when the fence is not the running claim's (nothing changed).
local m = redis.call('HMGET', KEYS[1], 's', 'f', 'k')
if m[2] ~= ARGV[1] then
  return 0
end
if m[1] == 'done' or m[1] == 'retrying' then
  if ARGV[6] == '1' then
    -- Write the state it has again, so that the WAIT after the script
    -- covers the first Finish, whose reply was lost: newer Redis versions
    -- make WAIT cover only writes of the connection's own commands.
    redis.call('HSET', KEYS[1], 's', m[1])
  end
  return 1
end
if m[1] ~= 'running' then
  return 0
end
local now = clock()
local state, leaseEnd = 'done', now
if ARGV[5] ~= '' then
  state, leaseEnd = 'retrying', tonumber(ARGV[5])
end
redis.call('HSET', KEYS[1], 's', state, 'o', ARGV[2], 'e', ARGV[3], 'd', ARGV[4],
  'fa', int(now), 'l', int(leaseEnd))
redis.call('ZREM', KEYS[3], ARGV[7])
if ARGV[8] ~= '' then
  if state == 'retrying' then
    redis.call('ZADD', ARGV[8], 0, liveMember(KEYS[1], ARGV[7]))
  else
    redis.call('ZREM', ARGV[8], liveMember(KEYS[1], ARGV[7]))
  end
end
expire(KEYS[1], KEYS[2], ARGV[7], math.max(tonumber(m[3]), leaseEnd))
return 1
