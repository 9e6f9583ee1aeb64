-- Deletes the entries of the actions log whose retention has ended: those
-- whose at + retention is before Redis's time.
-- KEYS: the log, its expiry index (actions.lua).
-- ARGV: the most entries to delete.
-- Reply: how many it deleted; as many as allowed means there may be more.
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. int(clock()), 'LIMIT', 0, tonumber(ARGV[1]))
for _, seq in ipairs(due) do
  redis.call('ZREMRANGEBYSCORE', KEYS[1], seq, seq)
  redis.call('ZREM', KEYS[2], seq)
end
return #due
