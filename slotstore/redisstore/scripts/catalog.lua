-- Reads the catalog entries of jobs, each in one step (catalog.go).
-- KEYS: the spec in force of each job; the job's other keys share its
--       prefix (keys.go).
-- Reply: for each job, in KEYS order: the fields of its spec in force
--       (fingerprint, '' for none, body, revision, replica, since), the
--       number of its carriers and, for each, name and time, then the
--       number of its past specs and each past spec's record.
local out = {}
for _, spec in ipairs(KEYS) do
  local tag = string.sub(spec, 1, #spec - 4)
  local f = redis.call('HMGET', spec, 'fp', 'body', 'rev', 'replica', 'since')
  for j = 1, 5 do
    out[#out + 1] = f[j] or ''
  end
  local carriers = redis.call('HGETALL', tag .. 'carriers')
  out[#out + 1] = #carriers / 2
  for _, v in ipairs(carriers) do
    out[#out + 1] = v
  end
  local past = redis.call('LRANGE', tag .. 'past', 0, -1)
  out[#out + 1] = #past
  for _, v in ipairs(past) do
    out[#out + 1] = v
  end
end
return out
