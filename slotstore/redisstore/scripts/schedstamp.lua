-- Stamps, in a Cluster, the sequence numbers schedindex.lua gave writes
-- into their entries, each unless the entry is gone or holds a newer one.
-- KEYS: the spec in force of each job.
-- ARGV: the sequence number of each, in KEYS order.
for i, spec in ipairs(KEYS) do
  local seq = tonumber(ARGV[i])
  local cur = redis.call('HMGET', spec, 'fp', 'seq')
  if cur[1] and tonumber(cur[2] or '0') < seq then
    redis.call('HSET', spec, 'seq', ARGV[i])
  end
end
return 0
