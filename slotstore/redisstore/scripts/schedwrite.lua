-- Applies schedule writes in order, each with the rule of Schedules held as
-- data (slotstore's package documentation; rules.ApplyWrite in Go), at
-- Redis's time now, and returns each write's outcome and the entry after
-- it. On a single server it also keeps the schedule indexes, the catalog's
-- index and the sequence counter in the same call, and publishes one
-- notice when it changed anything; in a Cluster the caller does that with
-- schedindex.lua.
-- KEYS: the spec in force of each write's job (one job may come more than
--       once); the job's other keys share its prefix (keys.go).
-- ARGV: the writer; the prefix and suffix of the schedule indexes' keys,
--       the catalog's index and the channel of notices, all '' in a
--       Cluster; then six values a write, in KEYS order: its ID, '1' for a
--       delete or '', run job, fingerprint, body, and IfVersion (decimal,
--       -1 for any).
-- Reply: for each write, in KEYS order: 'ok' (changed), 'same' (a put of
--       what is in force), 'notsched', 'nosched' or 'mismatch', then the
--       job's entry as the prelude's entry lists it.
local by, ixp, ixt, catalog, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now = clock()
local MAX_PAST = 32
-- DELETED is slotstore.DeletedFingerprint.
local DELETED = 'deleted'

local function netstring(s)
  return #s .. ':' .. s .. ','
end

-- decide is rules.ApplyWrite's choice for write w of the entry whose spec
-- hash holds cur (fp, body, rev, replica, since, run, ver, seq, del).
local function decide(cur, w)
  local fp, run = cur[1], cur[6] or ''
  local live = run ~= '' and cur[9] ~= '1'
  if run == '' and fp then
    return 'notsched'
  elseif not w.delete and live and run == w.run and fp == w.fp then
    return 'same'
  elseif w.delete and not live then
    return 'nosched'
  end
  local have = 0
  if live then
    have = tonumber(cur[7] or '0')
  end
  if w.ifv ~= -1 and w.ifv ~= have then
    return 'mismatch'
  end
  return 'ok'
end

-- apply writes w to the job whose keys begin with tag, cur its spec hash
-- before, and returns the entry's new version.
local function apply(tag, cur, w)
  local spec = tag .. 'spec'
  if cur[1] then
    local rec = netstring(cur[1]) .. netstring(cur[3] or '0') .. netstring(cur[4] or '') .. netstring(cur[5] or '0')
      .. netstring(int(now)) .. netstring(cur[2] or '')
    redis.call('LPUSH', tag .. 'past', rec)
    redis.call('LTRIM', tag .. 'past', 0, MAX_PAST - 1)
  end
  local ver = tonumber(cur[7] or '0') + 1
  if w.delete then
    redis.call('HSET', spec, 'fp', DELETED, 'body', '', 'rev', '0', 'replica', by, 'since', int(now), 'ver', int(ver), 'del', '1')
  else
    redis.call('HSET', spec, 'fp', w.fp, 'body', w.body, 'rev', '0', 'replica', by, 'since', int(now), 'run', w.run, 'ver', int(ver))
    redis.call('HDEL', spec, 'del')
  end
  redis.call('DEL', tag .. 'carriers')
  redis.call('SET', tag .. 'gen', int(now), 'NX')
  return ver
end

local out, wrote = {}, false
for i, spec in ipairs(KEYS) do
  local tag = string.sub(spec, 1, #spec - 4)
  local a = 5 + (i - 1) * 6
  local w = {id = ARGV[a + 1], delete = ARGV[a + 2] == '1', run = ARGV[a + 3], fp = ARGV[a + 4], body = ARGV[a + 5],
    ifv = tonumber(ARGV[a + 6])}
  local cur = redis.call('HMGET', spec, 'fp', 'body', 'rev', 'replica', 'since', 'run', 'ver', 'seq', 'del')
  local code = decide(cur, w)
  if code == 'ok' then
    local ver = apply(tag, cur, w)
    if ixp ~= '' then
      local run = w.run
      if w.delete then
        run = ''
      end
      local seq = index(ixp, ixt, w.id, ver, run, true)
      redis.call('HSET', spec, 'seq', int(seq))
      redis.call('ZADD', catalog, 0, w.id)
      wrote = true
    end
  end
  out[#out + 1] = code
  entry(tag, out)
end
if wrote then
  redis.call('PUBLISH', channel, '')
end
return out
