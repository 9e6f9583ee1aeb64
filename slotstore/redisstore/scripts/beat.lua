-- Records a replica's beat, replacing its last, and deletes the beats kept
-- past their TTL and BeatKeep.
-- KEYS: the hash of beats.
-- ARGV: replica, how long to keep the beat (its TTL and BeatKeep, ms),
--       what the beat says.
-- Reply: 1. A beat is '<seen> <keep until> <what it says>', both Unix ms
--        by Redis's clock; the hash itself expires with its last beat.
local now = clock()
local keep = now + tonumber(ARGV[2])
local latest = keep
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local keepUntil = tonumber(string.match(all[i + 1], '^%d+ (%d+) '))
  if keepUntil == nil or keepUntil < now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif all[i] ~= ARGV[1] then
    latest = math.max(latest, keepUntil)
  end
end
redis.call('HSET', KEYS[1], ARGV[1], int(now) .. ' ' .. int(keep) .. ' ' .. ARGV[3])
redis.call('PEXPIREAT', KEYS[1], int(latest))
return 1
