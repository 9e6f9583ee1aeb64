-- Stores a value under a fence once per slot. KEYS[1] is the key's hash, as
-- set.lua writes it; KEYS[2] records that the slot's effect on the key was
-- committed, and with which fence. Both share a Cluster hash slot.
-- ARGV: fence, value, TTL of the value in ms ('0' for none), retention of
-- the record in ms, the slot in Unix ms.
-- Reply: {1, fence} when stored; {2, fence of the record} when the slot's
-- value was already stored; {0, highest} when the fence is below the
-- highest the key has seen. The record is checked first: a slot already
-- applied is reported as such, whatever the key has seen since.
-- Fences are compared as decimal strings, exactly, whatever their size.
local function atLeast(a, b)
  return #a > #b or (#a == #b and a >= b)
end
local applied = redis.call('GET', KEYS[2])
if applied then
  return {2, applied}
end
local highest = redis.call('HGET', KEYS[1], 'f')
if highest and not atLeast(ARGV[1], highest) then
  return {0, highest}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('HSET', KEYS[1], 'f', ARGV[1], 'v', ARGV[2], 'x', string.format('%d', now + ttl))
else
  redis.call('HSET', KEYS[1], 'f', ARGV[1], 'v', ARGV[2])
  redis.call('HDEL', KEYS[1], 'x')
end
-- Kept for the retention after the later of now and the slot.
local keep = tonumber(ARGV[4]) + math.max(0, tonumber(ARGV[5]) - now)
redis.call('SET', KEYS[2], ARGV[1], 'PX', string.format('%d', keep))
return {1, ARGV[1]}
