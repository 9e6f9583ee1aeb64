-- Begins the generation of every job that has none, at Redis's time now,
-- and returns every job's generation. A job whose fence counter exists
-- has data that was not lost: its record predates generations (an
-- upgrade), and its generation is born at the start (1 ms).
-- KEYS: the generation and the fence counter of each job, in pairs (one
--       job may come more than once).
-- Reply: when each job's generation began (Unix ms), in job order.
local now = clock()
local out = {}
for i = 1, #KEYS, 2 do
  local born = redis.call('GET', KEYS[i])
  if not born then
    born = int(now)
    if redis.call('EXISTS', KEYS[i + 1]) == 1 then
      born = '1'
    end
    redis.call('SET', KEYS[i], born)
  end
  out[#out + 1] = born
end
return out
