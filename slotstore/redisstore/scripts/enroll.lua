-- Begins the generation of every job that has none, at Redis's time now,
-- and returns every job's generation and the slot of its newest marker.
-- KEYS: the generation of each job (one job may come more than once); the
--       job's other keys share its prefix (keys.go).
-- ARGV: the store's index of live markers, '' for none (a Cluster).
-- Reply: two values a job, in KEYS order: when its generation began (Unix
--       ms), and the slot of its newest marker (Unix s), '' for none, or
--       '?' when more entries of markers already gone were met than one
--       call looks at. Entries of markers Redis has expired are removed on
--       the way and counted for Prune, as history.lua does.
local now = clock()
local out = {}
for _, gen in ipairs(KEYS) do
  local tag = string.sub(gen, 1, #gen - 3)
  local born = redis.call('GET', gen)
  if not born then
    born = int(now)
    redis.call('SET', gen, born)
  end
  local newest, seen, gone = '', 0, 0
  while newest == '' and seen < 1000 do
    local page = redis.call('ZREVRANGE', tag .. 'slots', 0, 31)
    if #page == 0 then
      break
    end
    for _, slot in ipairs(page) do
      seen = seen + 1
      if redis.call('EXISTS', tag .. 'm:' .. slot) == 1 then
        newest = slot
        break
      end
      forget(tag, slot, ARGV[1])
      gone = gone + 1
    end
  end
  if newest == '' and seen >= 1000 then
    newest = '?'
  end
  if gone > 0 then
    redis.call('INCRBY', tag .. 'pruned', gone)
  end
  out[#out + 1] = born
  out[#out + 1] = newest
end
return out
