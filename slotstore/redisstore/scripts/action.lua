-- Appends one entry to the actions log.
-- KEYS: the log's counter, the log (a sorted set: seq -> the entry), its
--       expiry index (a sorted set: keep until -> seq); one hash slot.
-- ARGV: the entry's fields as actions.go encodes them, its retention in
--       whole milliseconds.
-- Reply: {seq, at}: the entry's sequence number and Redis's time (Unix ms).
--        The log's member is '<seq> <at> ' and the fields; its expiry
--        index entry is at + retention.
local now = clock()
local seq = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], seq, int(seq) .. ' ' .. int(now) .. ' ' .. ARGV[1])
redis.call('ZADD', KEYS[3], int(now + tonumber(ARGV[2])), seq)
return {seq, now}
