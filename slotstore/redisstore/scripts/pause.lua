-- Pauses or resumes one job, or the whole cluster (the empty job), with the
-- pause's note.
-- KEYS: the set of what is paused, the hash of their notes (one hash slot).
-- ARGV: job, '1' to pause or '0' to resume, who paused, why.
-- Reply: 1. A pause records its note, '<at> <#by> <by><reason>' with at in
--        Unix ms by Redis's clock, replacing the last; a resume deletes it.
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], int(clock()) .. ' ' .. #ARGV[3] .. ' ' .. ARGV[3] .. ARGV[4])
else
  redis.call('SREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
end
return 1
