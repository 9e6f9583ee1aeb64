-- Lists what is paused, with each pause's note: one command where a
-- MULTI/EXEC of SMEMBERS and HGETALL was four, read by every replica every
-- second.
-- KEYS: the set of what is paused, the hash of their notes (one hash slot).
-- Reply: two values a pause: the job ('' for the whole cluster) and its
--        note as pause.lua records it, '' for a pause recorded before notes
--        were kept.
local out = {}
for _, job in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = job
  out[#out + 1] = redis.call('HGET', KEYS[2], job) or ''
end
return out
