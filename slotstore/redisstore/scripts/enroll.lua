-- Begins the generation of every job that has none, at Redis's time now,
-- offers each job's spec to the catalog when the call carries specs, and
-- returns every job's generation, the slot of its newest marker and its
-- spec in force.
-- KEYS: the generation of each job (one job may come more than once); the
--       job's other keys share its prefix (keys.go).
-- ARGV: the store's index of live markers, '' for none (a Cluster); the
--       index of the jobs with a catalog entry, '' for none (a Cluster,
--       where the caller adds the names); the enrolling replica, '' when
--       the call carries no specs; then, with specs, five values a job, in
--       KEYS order: its name, the fingerprint, body, revision (decimal, '0'
--       for none) and supersedes ('' for none) of its spec.
-- Reply: seven values a job, in KEYS order: when its generation began (Unix
--       ms); the slot of its newest marker (Unix s), '' for none, or '?'
--       when more entries of markers already gone were met than one call
--       looks at; and its spec in force once the offer was applied:
--       fingerprint ('' for none), body, revision, replica, since (Unix ms).
--       Entries of markers Redis has expired are removed on the way and
--       counted for Prune, as history.lua does.
local live, catalog, replica = ARGV[1], ARGV[2], ARGV[3]
local now = clock()
local MAX_PAST, MAX_CARRIERS = 32, 32

-- greater reports whether revision a exceeds revision b, both decimal
-- without leading zeros: compared as text, so that no int64 loses digits
-- as a Lua number.
local function greater(a, b)
  return #a > #b or (#a == #b and a > b)
end

-- A past spec is one list element: the netstrings ('<length>:<bytes>,') of
-- its fingerprint, revision, replica, since, until and body (keys.go).
local function netstring(s)
  return #s .. ':' .. s .. ','
end
local function pastFingerprint(rec)
  local n, at = string.match(rec, '^(%d+):()')
  return string.sub(rec, at, at + tonumber(n) - 1)
end

-- takes reports whether spec s, not the one in force (fingerprint f,
-- revision rev), takes force: the rule of rules.Takes (a spec in force with
-- no carrier left is replaced by any).
local function takes(tag, f, rev, s)
  if s.supersedes == f or redis.call('HLEN', tag .. 'carriers') == 0 then
    return true
  end
  if s.rev ~= '0' and rev ~= '0' then
    return greater(s.rev, rev)
  end
  for _, rec in ipairs(redis.call('LRANGE', tag .. 'past', 0, -1)) do
    if pastFingerprint(rec) == s.fp then
      return false
    end
  end
  return true
end

-- carry records replica as a carrier of the spec in force at now, keeping
-- the MAX_CARRIERS most recent, ties broken by name (rules.Offer).
local function carry(tag)
  local key = tag .. 'carriers'
  redis.call('HSET', key, replica, int(now))
  if redis.call('HLEN', key) <= MAX_CARRIERS then
    return
  end
  local h, all = redis.call('HGETALL', key), {}
  for j = 1, #h, 2 do
    all[#all + 1] = {name = h[j], at = tonumber(h[j + 1])}
  end
  table.sort(all, function(x, y) return x.at > y.at or (x.at == y.at and x.name < y.name) end)
  for j = MAX_CARRIERS + 1, #all do
    redis.call('HDEL', key, all[j].name)
  end
end

-- offer applies the enrolment of spec s by replica to the job whose keys
-- begin with tag: the rule of rules.Offer. A live schedule held as data
-- (run set, not deleted) is left as it is, carriers and all; a deleted one
-- becomes the configuration's (run and deleted cleared, version and
-- sequence number kept) and, having no carrier, takes the enrolled spec.
local function offer(tag, s)
  local spec = tag .. 'spec'
  local cur = redis.call('HMGET', spec, 'fp', 'rev', 'replica', 'since', 'body', 'run', 'del')
  if cur[6] and cur[6] ~= '' then
    if cur[7] ~= '1' then
      return
    end
    redis.call('HDEL', spec, 'run', 'del')
    redis.call('DEL', tag .. 'carriers')
  end
  local f = cur[1]
  if f == s.fp then
    if greater(s.rev, cur[2] or '0') then
      redis.call('HSET', spec, 'rev', s.rev) -- raised for an unchanged spec
    end
    carry(tag)
    return
  end
  if f then
    -- The replica now carries another spec: no longer this one.
    redis.call('HDEL', tag .. 'carriers', replica)
  end
  if f and not takes(tag, f, cur[2] or '0', s) then
    return
  end
  if f then
    local rec = netstring(f) .. netstring(cur[2] or '0') .. netstring(cur[3] or '') .. netstring(cur[4] or '0')
      .. netstring(int(now)) .. netstring(cur[5] or '')
    redis.call('LPUSH', tag .. 'past', rec)
    redis.call('LTRIM', tag .. 'past', 0, MAX_PAST - 1)
  end
  redis.call('HSET', spec, 'fp', s.fp, 'body', s.body, 'rev', s.rev, 'replica', replica, 'since', int(now))
  redis.call('DEL', tag .. 'carriers')
  carry(tag)
end

local out = {}
for i, gen in ipairs(KEYS) do
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
      forget(tag, slot, live)
      gone = gone + 1
    end
  end
  if newest == '' and seen >= 1000 then
    newest = '?'
  end
  if gone > 0 then
    redis.call('INCRBY', tag .. 'pruned', gone)
  end
  if replica ~= '' then
    local a = 4 + (i - 1) * 5
    offer(tag, {fp = ARGV[a + 1], body = ARGV[a + 2], rev = ARGV[a + 3], supersedes = ARGV[a + 4]})
    if catalog ~= '' then
      redis.call('ZADD', catalog, 0, ARGV[a])
    end
  end
  local f = redis.call('HMGET', tag .. 'spec', 'fp', 'body', 'rev', 'replica', 'since')
  out[#out + 1] = born
  out[#out + 1] = newest
  for j = 1, 5 do
    out[#out + 1] = f[j] or ''
  end
end
return out
