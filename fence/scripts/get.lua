-- Reads the value of a fenced key, if it has one that has not expired.
-- KEYS: the hash. ARGV: none.
-- Reply: {1, value, fence} or {0, '', highest fence or ''}.
local m = redis.call('HMGET', KEYS[1], 'f', 'v', 'x')
if not m[2] then
  return {0, '', m[1] or ''}
end
if m[3] then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if now >= tonumber(m[3]) then
    return {0, '', m[1]}
  end
end
return {1, m[2], m[1]}
