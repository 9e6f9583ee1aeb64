-- Lists the store's live markers in one state, newest slot first, from
-- below a given entry of the live index: what History of running or
-- retrying markers of every job reads, at a cost that follows the number of
-- live markers, not of markers. It looks at no more than a given number of
-- entries. An entry whose marker Redis has expired is removed with the
-- marker's other index entries and counted for Prune; one whose marker is
-- no longer running or retrying (a previous version of this package
-- changed it) is removed.
-- KEYS: the live index.
-- ARGV: the state wanted, the entry to list below ('' for the newest), the
--       most entries to look at, the length of the store's prefix.
-- Reply: the entry to go on below, or '' when the index is exhausted; then
--       sixteen values a marker: its key, then its FIELDS.
local state, cap = ARGV[1], tonumber(ARGV[3])
local max = '+'
if ARGV[2] ~= '' then
  max = '(' .. ARGV[2]
end
local out = {''}
local page = redis.call('ZREVRANGEBYLEX', KEYS[1], max, '-', 'LIMIT', 0, cap)
for _, entry in ipairs(page) do
  local key = string.sub(entry, 12)
  local m = redis.call('HMGET', key, unpack(FIELDS))
  if not m[1] then
    local slot = tostring(tonumber(string.sub(entry, 1, 11)))
    local tag = string.sub(key, 1, #key - #slot - 2)
    if redis.call('ZREM', tag .. 'slots', slot) == 1 then
      redis.call('INCR', tag .. 'pruned')
    end
    forget(tag, slot, KEYS[1])
  elseif m[1] ~= 'running' and m[1] ~= 'retrying' then
    redis.call('ZREM', KEYS[1], entry)
  elseif m[1] == state then
    out[#out + 1] = key
    for j = 1, #FIELDS do
      out[#out + 1] = m[j] or ''
    end
  end
end
if #page == cap then
  out[1] = page[#page]
end
return out
