-- Lists markers of one job, newest slot first, from below a given slot:
-- from the running index when only running markers are wanted, else from
-- the slot index, filtered by state. It looks at no more than a given number
-- of entries, so that no call keeps Redis busy for long. Entries whose
-- marker Redis has expired are removed on the way and counted for Prune.
-- KEYS: the index to walk, then the job's slot, expiry and running indexes
--       and pruned counter.
-- ARGV: the prefix of its marker keys, the most markers wanted, the state
--       wanted ('' for any), the slot to list below ('' for the newest), the
--       most entries to look at, the store's live index ('' for none).
-- Reply: the slot to go on below, or '' when the index is exhausted; then
--       sixteen values a marker: its slot (Unix s), then its FIELDS.
local want, state, cap = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[5])
local max = '+inf'
if ARGV[4] ~= '' then
  max = '(' .. ARGV[4]
end
local out = {''}
local found, seen, gone, last = 0, 0, 0, ''
while found < want and seen < cap do
  local size = math.min(cap - seen, 128)
  local page = redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'LIMIT', 0, size)
  for _, slot in ipairs(page) do
    seen, last = seen + 1, slot
    local m = redis.call('HMGET', ARGV[1] .. slot, unpack(FIELDS))
    if not m[1] then
      if redis.call('ZREM', KEYS[2], slot) == 1 then
        gone = gone + 1
      end
      redis.call('ZREM', KEYS[3], slot)
      redis.call('ZREM', KEYS[4], slot)
      if ARGV[6] ~= '' then
        redis.call('ZREM', ARGV[6], liveMember(ARGV[1] .. slot, slot))
      end
    elseif state == '' or m[1] == state then
      out[#out + 1] = slot
      for j = 1, #FIELDS do
        out[#out + 1] = m[j] or ''
      end
      found = found + 1
      if found == want then
        break
      end
    end
  end
  if #page < size and found < want then
    last = ''
    break
  end
  max = '(' .. last
end
out[1] = last
if gone > 0 then
  redis.call('INCRBY', KEYS[5], gone)
end
return out
