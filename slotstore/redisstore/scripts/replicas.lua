-- Lists the beats kept, and deletes those past their TTL and BeatKeep.
-- KEYS: the hash of beats.
-- Reply: Redis's time now (Unix ms), then two values a beat kept: its
--        replica and the beat as beat.lua records it.
local now = clock()
local out = {int(now)}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local keepUntil = tonumber(string.match(all[i + 1], '^%d+ (%d+) '))
  if keepUntil == nil or keepUntil < now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
