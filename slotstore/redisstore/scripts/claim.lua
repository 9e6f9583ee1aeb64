-- Claims a batch of slots: slotstore.Decide and slotstore.Apply in Lua,
-- atomic because Redis runs one script at a time. It decides every request
-- first, reading only, then writes: a batch that fails while deciding (a key
-- of the wrong type) changes nothing, and fences are stored before any
-- marker that carries one.
--
-- KEYS: for each job g = 1..G its fence counter, slot index, expiry index
--       and running index (KEYS[4g-3] .. KEYS[4g]); then the marker of each
--       request (KEYS[4G+i]); then, when ARGV[3] is '1', the set of job names.
-- ARGV: replica, G, '1' or '0', the G job names, then seven values a
--       request: job g, slot (Unix s), lease (ms), on_crash, max attempts,
--       keep until (Unix ms), takeover only ('1' or '0').
-- Reply: fourteen values a request: status (1 won, 2 held, 3 finished,
--       4 abandoned, 5 absent), the marker's FIELDS as the claim left it, the
--       previous holder of a won slot, the remaining lease of a held one (ms).
local replica, G = ARGV[1], tonumber(ARGV[2])
local now, floor = clock()
local nowText = int(now)
local first = 4 + G
local n = (#ARGV - first + 1) / 7

-- The next fence of job g: past the last one and never below Redis's clock
-- in microseconds, so a counter lost with the data restarts above every
-- fence issued before.
local fences = {}
local function nextFence(g)
  local f = fences[g]
  if f == nil then
    f = tonumber(redis.call('GET', KEYS[4 * g - 3]) or '0')
  end
  f = math.max(f + 1, floor)
  fences[g] = f
  return f
end

-- Decide, in request order. A slot named twice sees what the batch did to
-- it before.
local markers = {} -- marker key -> fields as the batch left them
local writes = {}  -- {request, g, slot, expire at}: the markers to write
local out = {}
for i = 1, n do
  local a = first + (i - 1) * 7
  local g, slot = tonumber(ARGV[a]), ARGV[a + 1]
  local lease, onCrash = tonumber(ARGV[a + 2]), ARGV[a + 3]
  local maxAttempts, keep = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local key = KEYS[4 * G + i]
  local m = markers[key] or redis.call('HMGET', key, unpack(FIELDS))
  local state = m[1]

  local decision = 'lose'
  if not state then
    if ARGV[a + 6] ~= '1' then
      decision = 'win'
    end
  elseif state == 'released' then
    decision = 'win'
  elseif state == 'running' and now >= tonumber(m[6]) then
    if onCrash == 'skip' or (maxAttempts > 0 and tonumber(m[4]) >= maxAttempts) then
      decision = 'abandon'
    else
      decision = 'win'
    end
  end

  local status, prev, remaining = 0, '', 0
  if decision == 'win' then
    prev = m[2] or ''
    local leaseEnd = now + lease
    m = {'running', replica, int(nextFence(g)), int(tonumber(m[4] or '0') + 1),
      nowText, int(leaseEnd), ARGV[a + 5], '', '', '', ''}
    writes[#writes + 1] = {i, g, slot, int(math.max(keep, leaseEnd))}
    status = 1
  elseif decision == 'abandon' then
    m[1], m[8] = 'abandoned', nowText
    writes[#writes + 1] = {i, g, slot, int(math.max(tonumber(m[7]), now))}
    status = 4
  elseif not state then
    status = 5
  elseif state == 'running' then
    status, remaining = 2, tonumber(m[6]) - now
  elseif state == 'abandoned' then
    status = 4
  else
    status = 3
  end
  markers[key] = m

  out[#out + 1] = status
  for j = 1, #FIELDS do
    out[#out + 1] = m[j] or ''
  end
  out[#out + 1] = prev
  out[#out + 1] = remaining
end

-- Write: fences first, then markers, then the indexes, a job at a time.
if ARGV[3] == '1' then
  redis.call('SADD', KEYS[#KEYS], unpack(ARGV, 4, 3 + G))
end
for g, f in pairs(fences) do
  redis.call('SET', KEYS[4 * g - 3], int(f))
end
local running, expiries = {}, {}
for g = 1, G do
  running[g], expiries[g] = {}, {}
end
for _, w in ipairs(writes) do
  local i, g, slot, at = w[1], w[2], w[3], w[4]
  local key = KEYS[4 * G + i]
  local m = markers[key]
  local r, e = running[g], expiries[g]
  if m[1] == 'running' then
    redis.call('HSET', key, 's', m[1], 'h', m[2], 'f', m[3], 'a', m[4], 'c', m[5], 'l', m[6], 'k', m[7],
      'fa', '', 'o', '', 'e', '', 'd', '')
    r[#r + 1], r[#r + 2] = slot, slot
  else
    redis.call('HSET', key, 's', m[1], 'fa', m[8])
    redis.call('ZREM', KEYS[4 * g], slot)
  end
  redis.call('PEXPIREAT', key, at)
  e[#e + 1], e[#e + 2] = at, slot
end
for g = 1, G do
  if #running[g] > 0 then
    redis.call('ZADD', KEYS[4 * g - 2], unpack(running[g]))
    redis.call('ZADD', KEYS[4 * g], unpack(running[g]))
  end
  if #expiries[g] > 0 then
    redis.call('ZADD', KEYS[4 * g - 1], unpack(expiries[g]))
  end
end
return out
