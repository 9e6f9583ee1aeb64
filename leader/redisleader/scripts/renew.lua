-- Extends the lease held under the presented fence (compare-and-pexpire).
-- KEYS: the lease hash. ARGV: fence, lease (ms).
-- Reply: 1, or 0 when the fence does not hold the lease (nothing changed).
if redis.call('HGET', KEYS[1], 'f') ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
