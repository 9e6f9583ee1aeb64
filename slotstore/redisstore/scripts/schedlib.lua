-- Prepended, after the prelude, to the scripts that keep the store's
-- indexes of schedules held as data (keys.go): the live schedules by ID,
-- those of each run job by ID, every schedule by the sequence number of
-- its last write, the sequence counter, and each schedule's version and
-- run job as the indexes last recorded them. They share one hash tag, so
-- in a Cluster they live together in one hash slot, apart from the jobs.

-- escapeName escapes a job's name as keys.go's escape does, so that it
-- holds no brace.
local function escapeName(s)
  return (string.gsub(s, '[%%{}]', {['%'] = '%25', ['{'] = '%7B', ['}'] = '%7D'}))
end

-- index records in the indexes whose keys are ixp .. name .. ixt that
-- schedule id is at version ver and runs run ('' once deleted). Unless
-- force (a single server, where the write and its indexing are one step),
-- a version the indexes already hold, or an older one, changes nothing (a
-- write indexed again, or late, in a Cluster). It returns the schedule's
-- sequence number and whether it is a new one.
local function index(ixp, ixt, id, ver, run, force)
  local verKey, seqKey, liveKey = ixp .. 'ver' .. ixt, ixp .. 'seq' .. ixt, ixp .. 'live' .. ixt
  local rec = redis.call('HGET', verKey, id)
  local old, oldRun = 0, ''
  if rec then
    local v, r = string.match(rec, '^(%d+) (.*)$')
    old, oldRun = tonumber(v), r
  end
  if old >= ver and not force then
    return tonumber(redis.call('ZSCORE', seqKey, id) or '0'), false
  end
  local seq = redis.call('INCR', ixp .. 'head' .. ixt)
  redis.call('ZADD', seqKey, seq, id)
  if oldRun ~= '' then
    redis.call('ZREM', liveKey, id)
    redis.call('ZREM', ixp .. 'run:' .. escapeName(oldRun) .. ixt, id)
  end
  if run ~= '' then
    redis.call('ZADD', liveKey, 0, id)
    redis.call('ZADD', ixp .. 'run:' .. escapeName(run) .. ixt, 0, id)
  end
  redis.call('HSET', verKey, id, int(ver) .. ' ' .. run)
  return seq, true
end
