-- Extends the lease of a running slot held under the presented fence.
-- KEYS: the marker, the job's expiry index (and its running index, unused).
-- ARGV: fence, lease (ms), slot (and the store's live index, unused).
-- Reply: 1; 2 when the slot is done or retrying under that fence (its run
--        recorded its end; nothing changed); 0 when the fence is not the
--        running claim's (nothing changed).
local m = redis.call('HMGET', KEYS[1], 's', 'f', 'k')
if m[2] ~= ARGV[1] then
  return 0
end
if m[1] == 'done' or m[1] == 'retrying' then
  return 2
end
if m[1] ~= 'running' then
  return 0
end
local now = clock()
local leaseEnd = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'l', int(leaseEnd))
expire(KEYS[1], KEYS[2], ARGV[3], math.max(tonumber(m[3]), leaseEnd))
return 1
