-- Reads the catalog entries of jobs, each in one step (catalog.go).
-- KEYS: the spec in force of each job; the job's other keys share its
--       prefix (keys.go).
-- Reply: for each job, in KEYS order, its entry as the prelude's entry
--       lists it.
local out = {}
for _, spec in ipairs(KEYS) do
  entry(string.sub(spec, 1, #spec - 4), out)
end
return out
