-- Prepended to every script of this package.

-- The fields of a marker hash, in the order scripts read and return them:
-- state, holder, fence, attempt, claimed at, lease end (or retry due),
-- keep until, finished at (Unix ms, Redis's clock), outcome, error,
-- duration (ns), reason, manual ('1' or ''), incarnation of the claim,
-- backfill ('1' or '').
local FIELDS = {'s', 'h', 'f', 'a', 'c', 'l', 'k', 'fa', 'o', 'e', 'd', 'r', 'mn', 'i', 'bf'}
-- PLACE is the place of each field in FIELDS.
local PLACE = {}
for j, f in ipairs(FIELDS) do
  PLACE[f] = j
end

-- int formats a whole number exactly; tostring rounds past 14 digits.
local function int(x)
  return string.format('%d', x)
end

-- clock returns Redis's time in Unix milliseconds and in microseconds.
local function clock()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

-- expire makes the marker of slot disappear at Unix ms at, and records that
-- in the job's expiry index for Prune.
local function expire(marker, expiry, slot, at)
  redis.call('PEXPIREAT', marker, int(at))
  redis.call('ZADD', expiry, int(at), slot)
end

-- liveMember is the entry of a marker in the store's index of live
-- (running or retrying) markers: its slot, zero-padded so that entries sort
-- by slot, then its key.
local function liveMember(key, slot)
  return string.format('%011d', tonumber(slot)) .. key
end

-- forget removes the entries of the marker of slot, which Redis has
-- deleted, from the indexes of the job whose keys begin with tag, and from
-- the live index when there is one ('' otherwise).
local function forget(tag, slot, live)
  redis.call('ZREM', tag .. 'slots', slot)
  redis.call('ZREM', tag .. 'expiry', slot)
  redis.call('ZREM', tag .. 'running', slot)
  if live ~= '' then
    redis.call('ZREM', live, liveMember(tag .. 'm:' .. slot, slot))
  end
end

-- entry appends to out the catalog entry of the job whose keys begin with
-- tag (catalog.go reads it): the fields of its spec in force (fingerprint,
-- '' for none, body, revision, replica, since), those of a schedule held as
-- data (run, version, sequence number, deleted '1' or ''), the number of
-- its carriers and, for each, name and time, then the number of its past
-- specs and each past spec's record.
local function entry(tag, out)
  local f = redis.call('HMGET', tag .. 'spec', 'fp', 'body', 'rev', 'replica', 'since', 'run', 'ver', 'seq', 'del')
  for j = 1, 9 do
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
