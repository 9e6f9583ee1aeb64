-- Ends the lease held under the presented fence (compare-and-delete) and
-- wakes the waiting followers.
-- KEYS: the lease hash. ARGV: fence, the name's channel.
-- Reply: 1, or 0 when the fence does not hold the lease (nothing changed).
if redis.call('HGET', KEYS[1], 'f') ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return 1
