-- Stores a value under a fence: only if the fence is at least the highest
-- the key has seen. The hash holds the highest fence (f), the value (v) and,
-- when the value has a TTL, when it expires (x, Unix ms by Redis's clock).
-- The hash itself never expires: the highest fence must outlive every
-- holder, or a stale one could write again.
-- KEYS: the hash. ARGV: fence, value, TTL in ms ('0' for none).
-- Reply: {1, fence} when stored, {0, highest} when the fence is stale.
-- Fences are compared as decimal strings, exactly, whatever their size.
local function atLeast(a, b)
  return #a > #b or (#a == #b and a >= b)
end
local highest = redis.call('HGET', KEYS[1], 'f')
if highest and not atLeast(ARGV[1], highest) then
  return {0, highest}
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  local t = redis.call('TIME')
  local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl
  redis.call('HSET', KEYS[1], 'f', ARGV[1], 'v', ARGV[2], 'x', string.format('%d', at))
else
  redis.call('HSET', KEYS[1], 'f', ARGV[1], 'v', ARGV[2])
  redis.call('HDEL', KEYS[1], 'x')
end
return {1, ARGV[1]}
