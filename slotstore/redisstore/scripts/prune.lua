-- Forgets the markers of one job whose time is up: those Redis has expired
-- (their index entries go) and any still present that Prune may delete
-- (retention over, and not running or retrying before the lease ends or
-- the retry is due).
-- KEYS: the job's slot, expiry and running indexes, pruned counter, and, on
--       a single server, the set of job names.
-- ARGV: the prefix of its marker keys, the most entries to look at, the
--       job's name, the store's live index ('' for none).
-- Reply: {markers pruned, entries looked at}; as many looked at as allowed
--       means there may be more.
local now = clock()
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int(now), 'LIMIT', 0, tonumber(ARGV[2]))
local n = 0
for _, slot in ipairs(due) do
  local key = ARGV[1] .. slot
  local m = redis.call('HMGET', key, 's', 'l', 'k')
  if m[1] then
    -- Still here although its expiry is not after TIME: it expires this
    -- very millisecond, or Redis judges expiry by a clock read at the start
    -- of the script.
    local leaseEnd, keep = tonumber(m[2]), tonumber(m[3])
    local live = m[1] == 'running' or m[1] == 'retrying'
    if now > keep and (not live or now >= leaseEnd) then
      redis.call('DEL', key)
      m[1] = false
    elseif live then
      expire(key, KEYS[2], slot, math.max(keep, leaseEnd))
    else
      expire(key, KEYS[2], slot, keep)
    end
  end
  if not m[1] then
    redis.call('ZREM', KEYS[1], slot)
    redis.call('ZREM', KEYS[2], slot)
    redis.call('ZREM', KEYS[3], slot)
    if ARGV[4] ~= '' then
      redis.call('ZREM', ARGV[4], liveMember(key, slot))
    end
    n = n + 1
  end
end
local found = redis.call('GET', KEYS[4])
if found then
  redis.call('DEL', KEYS[4])
  n = n + tonumber(found)
end
if KEYS[5] and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[5], ARGV[3])
end
return {n, #due}
