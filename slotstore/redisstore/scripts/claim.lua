-- Claims or skips a batch of slots: slotstore's decision table (its Go
-- version is internal to slotstore) in Lua, atomic because Redis runs one
-- script at a time. It
-- decides every request first, reading only, then writes: a batch that
-- fails while deciding (a key of the wrong type) changes nothing, and
-- generations and fences are stored before any marker that relies on them.
--
-- KEYS: the generation of the first job (so that a Cluster client routes
--       the call; every key the script touches shares its hash slot), then,
--       when ARGV[4] is '1', the set of job names and the live index.
-- ARGV: replica, incarnation, G, '1' or '0', the reason of a slot skipped
--       for data loss, the claim lead (ms: slotstore.ClaimLead, how long
--       before its slot a claim may create a slot's first marker; a
--       generation covers the slots from its beginning plus the lead), P,
--       then the G job names, the G prefixes of their keys
--       ('<prefix>{job}:'), then P profiles of twelve values each:
--       lease (ms), on_crash, max attempts, retain (ms), takeover only ('1'
--       or '0'), overlap, manual ('1' or '0'), skip ('1' for a skip, '0' for
--       a claim), reason (a skip's; for a claim with replace, the reason of
--       the markers it replaces), term ('1' or '0': a standing lease, claimed
--       whatever the generation), backfill ('1' or '0': a claim that may win
--       a slot recorded skipped, before slot + retain by Redis's clock, and
--       is takeover-only after), spec (the fingerprint the request is made
--       under, '' for none); then five values a request: job g, slot
--       (Unix s), profile p, not before ('' for none, '=' for the slot
--       itself, else Unix us), not after ('' for none, else us after the
--       slot, negative before it, as Lua's tonumber reads them: '6e7' for
--       a minute). A claim that would create a slot's first marker once
--       Redis's clock (us) is past its not after records the slot skipped,
--       'missed: late' (slotstore.ReasonLate), as one skipped for data loss.
-- Reply: Redis's time (Unix ms), then for each request either two values,
--       9 and the fence, for a claim won as the slot's first marker (the
--       marker is running, attempt 1, claimed now, with nothing else but
--       what the request says), or eighteen: status (1 won, 2 held,
--       3 finished, 4 abandoned, 5 absent, 6 skipped, 7 waiting, 8 not
--       yet), the marker's FIELDS as the request left it, the previous
--       holder of a won slot, the remaining lease of a held slot, the time
--       until the retry of a waiting one or until a claim or skip not yet
--       due may be recorded (us), '1' when a won slot was retrying, and the
--       claims a replace claim superseded as 'slot fence slot fence ...';
--       or 10 alone for a request refused because its spec is not the
--       job's spec in force: it read and changed nothing else; or two
--       values, 11 and the least remaining lease (us, 0 for an expired
--       one) of the job's other running slots that hold back a claim with
--       queue, which changed nothing (queueWait); then, after every
--       request's values, Redis's time (Unix us) as the script ends, once
--       it has decided and written all of them: the answer's time
--       (slotstore.ClaimResult.Answered).
local replica, incarnation, G, P = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[7])
local dataLoss, lead = ARGV[5], tonumber(ARGV[6])
local live = ''
if ARGV[4] == '1' then
  live = KEYS[3]
end
local now, micros = clock()
local nowText = int(now)
local tags = {}
for g = 1, G do
  tags[g] = ARGV[7 + G + g]
end
local profiles = {}
for p = 1, P do
  local a = 8 + 2 * G + (p - 1) * 12
  profiles[p] = {
    lease = tonumber(ARGV[a]), onCrash = ARGV[a + 1], maxAttempts = tonumber(ARGV[a + 2]),
    retain = tonumber(ARGV[a + 3]), takeoverOnly = ARGV[a + 4] == '1', overlap = ARGV[a + 5],
    manual = ARGV[a + 6] == '1', skipping = ARGV[a + 7] == '1', reason = ARGV[a + 8], term = ARGV[a + 9] == '1',
    backfill = ARGV[a + 10] == '1', spec = ARGV[a + 11],
  }
end
local first = 8 + 2 * G + 12 * P
local stride = 5
local late = 'missed: late' -- slotstore.ReasonLate
local n = (#ARGV - first + 1) / stride

-- The keys of job g, by name (keys.go).
local function jobKey(g, k)
  return tags[g] .. k
end
local FENCE, GEN, SLOTS, EXPIRY, RUNNING, SPEC = 'fence', 'gen', 'slots', 'expiry', 'running', 'spec'

-- refused reports whether a request of job g made under spec ('' for
-- none) names another spec than the job's spec in force (rules.SpecAllows).
-- The spec in force is read once a batch, and only for requests that name
-- one: requests without are today's claims and cost nothing more.
local inForce = {}
local function refused(g, spec)
  if spec == '' then
    return false
  end
  local f = inForce[g]
  if f == nil then
    f = redis.call('HGET', jobKey(g, SPEC), 'fp') -- false for none
    inForce[g] = f
  end
  return f ~= false and f ~= spec
end

-- When job g's generation began (Unix ms): its record, or, for a job that
-- has none (never enrolled or claimed, or its record lost with the rest of
-- the data), now: the claim begins it, and the writes below record it.
local borns, births = {}, {}
local function bornOf(g)
  local b = borns[g]
  if b == nil then
    local v = redis.call('GET', jobKey(g, GEN))
    if v then
      b = tonumber(v)
    else
      b = now
      births[g] = true
    end
    borns[g] = b
  end
  return b
end

-- covers reports whether a generation that began at born (Unix ms) covers
-- slot (Unix s): slot is not older than born + lead (Generation.Covers).
-- A claim of a slot may be made from lead before it, so a slot less than
-- lead after born may have been claimed, and its marker lost, before the
-- generation began.
local function covers(slot, born)
  return tonumber(slot) * 1000 >= born + lead
end

-- The next fence of job g: past the last one and never below Redis's clock
-- in microseconds, so a counter lost with the data restarts above every
-- fence issued before.
local fences = {}
local function nextFence(g)
  local f = fences[g]
  if f == nil then
    f = tonumber(redis.call('GET', jobKey(g, FENCE)) or '0')
  end
  f = math.max(f + 1, micros)
  fences[g] = f
  return f
end

-- Markers as the batch leaves them, by key, read on first use: a table of
-- FIELDS by place, with nil for a field the hash lacks (all of them when
-- there is no marker).
local markers = {}
local function markerOf(key)
  local m = markers[key]
  if m == nil then
    m = {}
    local h = redis.call('HGETALL', key)
    for j = 1, #h, 2 do
      local at = PLACE[h[j]]
      if at then
        m[at] = h[j + 1]
      end
    end
    markers[key] = m
  end
  return m
end

-- The slots of job g that may be running: its running index, read only
-- when an overlap policy needs it, plus the slots the batch won.
local running, wonEarly = {}, {}
local function runningOf(g)
  local r = running[g]
  if r == nil then
    r = {}
    for _, slot in ipairs(redis.call('ZRANGE', jobKey(g, RUNNING), 0, -1)) do
      r[slot] = true
    end
    for _, slot in ipairs(wonEarly[g] or {}) do
      r[slot] = true
    end
    running[g] = r
  end
  return r
end
local function noteRunning(g, slot)
  if running[g] then
    running[g][slot] = true
  else
    wonEarly[g] = wonEarly[g] or {}
    table.insert(wonEarly[g], slot)
  end
end

-- others returns {slot, key} of job g's running slots other than slot,
-- oldest first.
local function others(g, slot)
  local out = {}
  for s in pairs(runningOf(g)) do
    local key = tags[g] .. 'm:' .. s
    if s ~= slot and markerOf(key)[1] == 'running' then
      out[#out + 1] = {s, key}
    end
  end
  table.sort(out, function(x, y) return tonumber(x[1]) < tonumber(y[1]) end)
  return out
end

-- liveOther reports whether a slot of job g other than slot runs under a
-- live lease.
local function liveOther(g, slot)
  for _, o in ipairs(others(g, slot)) do
    if now < tonumber(markerOf(o[2])[6]) then
      return true
    end
  end
  return false
end

-- queueWait is, for a claim with queue (profile pr) of job g's slot, the
-- least remaining lease (us) of the job's other running slots that hold it
-- back, nil for none (rules.QueueWait): under a live lease, or an expired
-- one (0) a takeover may still win: on_crash retry, attempts left, claimed
-- since the generation began or a term's claim.
local function queueWait(g, slot, pr, born)
  local wait
  for _, o in ipairs(others(g, slot)) do
    local om = markerOf(o[2])
    local left = math.max(tonumber(om[6]) * 1000 - micros, 0)
    if (now < tonumber(om[6]) or (pr.onCrash ~= 'skip' and not (pr.maxAttempts > 0 and tonumber(om[4]) >= pr.maxAttempts)
        and (pr.term or tonumber(om[5]) >= born))) and (wait == nil or left < wait) then
      wait = left
    end
  end
  return wait
end

-- Decide and apply, in request order. A slot named twice sees what the
-- batch did to it before.
local dirty, dirtyOrder = {}, {} -- marker key -> {g, slot}: the markers to write
local function touch(key, g, slot)
  if not dirty[key] then
    dirty[key] = {g, slot}
    dirtyOrder[#dirtyOrder + 1] = key
  end
end
-- fresh holds the markers won as first markers by the compact path: they
-- carry only the fields a first claim sets, and the reply only their fence.
local fresh = {}
local out = {nowText}
-- decideOne decides and applies one request of job g, not refused.
local function decideOne(g, slot, pr, notBefore, notAfter)
  local lease, onCrash, maxAttempts = pr.lease, pr.onCrash, pr.maxAttempts
  local takeoverOnly, overlap, manual = pr.takeoverOnly, pr.overlap, pr.manual
  local skipping, reason, term, backfill = pr.skipping, pr.reason, pr.term, pr.backfill
  local keep = int(tonumber(slot) * 1000 + pr.retain)
  if backfill and now >= tonumber(slot) * 1000 + pr.retain then
    -- At its retention's end the slot's marker may have expired after it
    -- ran, and one made now would expire at once: a backfill then claims
    -- as a takeover-only claim, creating no marker (rules.Effective).
    backfill, takeoverOnly = false, true
  end
  if notBefore == '=' then
    notBefore = slot .. '000000'
  end
  local key = tags[g] .. 'm:' .. slot
  local m = markerOf(key)
  local state = m[1]

  -- Every claim begins its job's generation if it has none, whatever it
  -- decides; skips are recorded as asked whatever the generation.
  local decision, early = 'lose', false
  local born = skipping and 0 or bornOf(g)
  if skipping then
    if not state then
      if notBefore ~= '' and micros < tonumber(notBefore) then
        early = true
      else
        decision = 'skip'
      end
    end
  elseif not state then
    if not takeoverOnly and not term and not covers(slot, born) then
      -- Not covered by the generation: its marker may have been lost with
      -- the data, after it ran (or was claimed ahead, before the generation
      -- began).
      decision, reason = 'skip', dataLoss
    elseif not takeoverOnly and notBefore ~= '' and micros < tonumber(notBefore) then
      -- Before its NotBefore by this clock (a replica whose clock runs
      -- ahead): no first marker yet.
      early = true
    elseif not takeoverOnly and notAfter ~= '' and micros > tonumber(slot) * 1000000 + tonumber(notAfter) then
      -- After its NotAfter by this clock (a replica whose clock runs
      -- behind): the slot's window has closed, whatever else runs.
      decision, reason = 'skip', late
    elseif not takeoverOnly then
      decision = 'win'
      if overlap == 'forbid' then
        if liveOther(g, slot) then
          decision, reason = 'skip', 'overlap'
        end
      elseif overlap == 'replace' and #others(g, slot) > 0 then
        decision = 'replace'
      elseif overlap == 'queue' then
        -- Waits for the job's running slot: no marker, no fence.
        local wait = queueWait(g, slot, pr, born)
        if wait then
          out[#out + 1], out[#out + 2] = 11, wait
          return
        end
      end
    end
  elseif state == 'skipped' then
    -- A backfill wins a slot that never ran as a first claim would: not
    -- one skipped for data loss, nor one the generation does not cover,
    -- which may have run (or been claimed ahead) before the loss, nor one
    -- whose skip came back from before the generation began (a restored
    -- backup: it may have been backfilled since), nor, with forbid, while
    -- another slot runs under a live lease. Before its NotBefore it waits, changing nothing.
    if backfill and m[12] ~= dataLoss then
      if notBefore ~= '' and micros < tonumber(notBefore) then
        early = true
      elseif tonumber(m[5]) >= born and covers(slot, born)
          and not (overlap == 'forbid' and liveOther(g, slot)) then
        decision = 'backfill'
      end
    end
  elseif (state == 'released' or state == 'retrying' or state == 'running') and not term
      and tonumber(m[5]) < born and (state == 'released' or now >= tonumber(m[6])) then
    -- Claimed before the generation began: it came back from before a loss
    -- (a restored backup), and its slot may have finished since. Once no
    -- live lease holds it, it is abandoned, never taken over.
    decision = 'abandon loss'
  elseif state == 'released' then
    decision = 'win'
  elseif state == 'retrying' then
    if now >= tonumber(m[6]) then
      decision = 'win'
    end
  elseif state == 'running' and now >= tonumber(m[6]) then
    if onCrash == 'skip' or (maxAttempts > 0 and tonumber(m[4]) >= maxAttempts) then
      decision = 'abandon'
    else
      decision = 'win'
    end
  end

  local status, prev, remaining, retry, replaced = 0, '', 0, '0', {}
  if decision == 'backfill' then
    m = {'running', replica, int(nextFence(g)), '1', nowText, int(now + lease), keep, '', '', '', '', '', '', incarnation, '1'}
    noteRunning(g, slot)
    status = 1
  elseif decision == 'win' or decision == 'replace' then
    if decision == 'replace' then
      for _, o in ipairs(others(g, slot)) do
        local om = markerOf(o[2])
        om[1], om[12], om[6], om[8] = 'replaced', reason, nowText, nowText
        fresh[o[2]] = nil
        touch(o[2], g, o[1])
        replaced[#replaced + 1] = o[1] .. ' ' .. om[3]
      end
    end
    local mark, bf = '', ''
    if state then
      prev, mark, bf = m[2], m[13] or '', m[15] or ''
    else
      if manual then
        mark = '1'
      end
      if backfill then
        bf = '1'
      end
    end
    if state == 'retrying' then
      retry = '1'
    end
    m = {'running', replica, int(nextFence(g)), int(tonumber(m[4] or '0') + 1),
      nowText, int(now + lease), keep, '', '', '', '', '', mark, incarnation, bf}
    noteRunning(g, slot)
    status = 1
  elseif decision == 'abandon' then
    m[1], m[8], m[12] = 'abandoned', nowText, 'max attempts'
    if onCrash == 'skip' then
      m[12] = 'on_crash skip'
    end
    status = 4
  elseif decision == 'abandon loss' then
    m[1], m[8], m[12] = 'abandoned', nowText, dataLoss
    status = 4
  elseif decision == 'skip' then
    local mark = ''
    if manual then
      mark = '1'
    end
    m = {'skipped', replica, '0', '0', nowText, nowText, keep, nowText, '', '', '', reason, mark, '', ''}
    status = 6
  elseif early then
    status, remaining = 8, tonumber(notBefore) - micros
  elseif not state then
    status = 5
  elseif state == 'running' then
    status, remaining = 2, math.max(tonumber(m[6]) * 1000 - micros, 0)
  elseif state == 'released' then
    status = 2
  elseif state == 'retrying' then
    status, remaining = 7, math.max(tonumber(m[6]) * 1000 - micros, 0)
  elseif state == 'abandoned' then
    status = 4
  elseif state == 'skipped' then
    status = 6
  else
    status = 3
  end
  if decision ~= 'lose' then
    markers[key] = m
    touch(key, g, slot)
  end

  if decision == 'win' and not state then
    fresh[key] = true
    out[#out + 1] = 9
    out[#out + 1] = m[3]
  else
    if decision ~= 'lose' then
      fresh[key] = nil -- no longer as its first claim left it
    end
    out[#out + 1] = status
    for j = 1, #FIELDS do
      out[#out + 1] = m[j] or ''
    end
    out[#out + 1] = prev
    out[#out + 1] = remaining
    out[#out + 1] = retry
    out[#out + 1] = table.concat(replaced, ' ')
  end
end
for i = 1, n do
  local a = first + (i - 1) * stride
  local g, slot, pr, notBefore = tonumber(ARGV[a]), ARGV[a + 1], profiles[tonumber(ARGV[a + 2])], ARGV[a + 3]
  if refused(g, pr.spec) then
    out[#out + 1] = 10
  else
    decideOne(g, slot, pr, notBefore, ARGV[a + 4])
  end
end

-- Write: generations and fences first, then markers, then the indexes, a
-- job at a time.
if ARGV[4] == '1' and #dirtyOrder > 0 then
  local names, named = {}, {}
  for _, key in ipairs(dirtyOrder) do
    local g = dirty[key][1]
    if not named[g] then
      named[g] = true
      names[#names + 1] = ARGV[7 + g]
    end
  end
  redis.call('SADD', KEYS[2], unpack(names))
end
for g in pairs(births) do
  redis.call('SET', jobKey(g, GEN), int(borns[g]))
end
for g, f in pairs(fences) do
  redis.call('SET', jobKey(g, FENCE), int(f))
end
local slots, adds, dels, expiries = {}, {}, {}, {}
local liveAdds, liveDels = {}, {}
for g = 1, G do
  slots[g], adds[g], dels[g], expiries[g] = {}, {}, {}, {}
end
for _, key in ipairs(dirtyOrder) do
  local g, slot = dirty[key][1], dirty[key][2]
  local m = markers[key]
  local args = {}
  if fresh[key] then
    -- A new hash: only the fields a first claim sets; readers take a
    -- missing field for ''.
    args = {'s', m[1], 'h', m[2], 'f', m[3], 'a', m[4], 'c', m[5], 'l', m[6], 'k', m[7]}
    if m[13] ~= '' then
      args[#args + 1], args[#args + 2] = 'mn', m[13]
    end
    if m[14] ~= '' then
      args[#args + 1], args[#args + 2] = 'i', m[14]
    end
    if m[15] ~= '' then
      args[#args + 1], args[#args + 2] = 'bf', m[15]
    end
  else
    for j = 1, #FIELDS do
      args[#args + 1] = FIELDS[j]
      args[#args + 1] = m[j] or ''
    end
  end
  redis.call('HSET', key, unpack(args))
  -- A marker lives until its retention ends and, while running or
  -- retrying, until its lease ends or its retry is due.
  local at = math.max(tonumber(m[7]), now)
  if m[1] == 'running' or m[1] == 'retrying' then
    at = math.max(tonumber(m[7]), tonumber(m[6]))
  end
  redis.call('PEXPIREAT', key, int(at))
  local s, e = slots[g], expiries[g]
  s[#s + 1], s[#s + 2] = slot, slot
  e[#e + 1], e[#e + 2] = int(at), slot
  if m[1] == 'running' then
    adds[g][#adds[g] + 1], adds[g][#adds[g] + 2] = slot, slot
  else
    dels[g][#dels[g] + 1] = slot
  end
  -- Claims leave no marker retrying: live means running here.
  if m[1] == 'running' then
    liveAdds[#liveAdds + 1], liveAdds[#liveAdds + 2] = '0', liveMember(key, slot)
  elseif not fresh[key] then
    liveDels[#liveDels + 1] = liveMember(key, slot)
  end
end
-- Lua unpacks at most 8,000 values at once: write in chunks.
local function each(cmd, key, values)
  for i = 1, #values, 2000 do
    redis.call(cmd, key, unpack(values, i, math.min(i + 1999, #values)))
  end
end
for g = 1, G do
  each('ZADD', jobKey(g, SLOTS), slots[g])
  each('ZADD', jobKey(g, EXPIRY), expiries[g])
  each('ZADD', jobKey(g, RUNNING), adds[g])
  each('ZREM', jobKey(g, RUNNING), dels[g])
end
if live ~= '' then
  each('ZADD', live, liveAdds)
  each('ZREM', live, liveDels)
end
local _, answered = clock()
out[#out + 1] = answered
return out
