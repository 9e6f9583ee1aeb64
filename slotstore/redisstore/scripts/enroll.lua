-- Begins the generation of every job that has none, at Redis's time now,
-- and returns every job's generation.
-- KEYS: the generation of each job (one job may come more than once).
-- Reply: when each job's generation began (Unix ms), in KEYS order.
local now = clock()
local out = {}
for i, key in ipairs(KEYS) do
  local born = redis.call('GET', key)
  if not born then
    born = int(now)
    redis.call('SET', key, born)
  end
  out[i] = born
end
return out
