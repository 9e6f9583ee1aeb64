-- Records schedule writes in the schedule indexes, in a Cluster, where they
-- live apart from the jobs (schedlib.lua): each gets the next sequence
-- number unless the indexes hold its version already. Publishes one notice
-- when any did.
-- KEYS: the sequence counter (its hash slot is the indexes').
-- ARGV: the prefix and suffix of the indexes' keys, the channel of
--       notices, then three values a write: ID, version, run job ('' for a
--       deleted schedule).
-- Reply: each write's sequence number: the schedule's newest.
local ixp, ixt, channel = ARGV[1], ARGV[2], ARGV[3]
local out, wrote = {}, false
for a = 4, #ARGV, 3 do
  local seq, fresh = index(ixp, ixt, ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], false)
  out[#out + 1] = seq
  wrote = wrote or fresh
end
if wrote then
  redis.call('PUBLISH', channel, '')
end
return out
