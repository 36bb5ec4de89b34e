-- Many records' tallies (tally.lua) added up before they are written: a bulk chunk's, the build's. Prepended
-- after tally.lua.
-- Adds ``years`` (year -> records, all added; ``total`` their sum) to ``name``'s tally: its years read and
-- written together, a few commands a name whatever its years, YEARS_AT_ONCE at a time (unpack() takes at
-- most 8,000 values). None once the tallies were found wrong (tally.lua's drop_tallies).
local YEARS_AT_ONCE = 2000
local function tally_years(p, kind, name, years, total)
  if tallying == false then return end
  local counts, order = tally_keys(p, kind, name)
  local listed = {}
  for year in pairs(years) do listed[#listed + 1] = year end
  for first = 1, #listed, YEARS_AT_ONCE do
    local some = {unpack(listed, first, math.min(#listed, first + YEARS_AT_ONCE - 1))}
    local stored = redis.call('HMGET', counts, unpack(some))
    local counted, added = {}, {}
    for k, year in ipairs(some) do
      counted[#counted + 1], counted[#counted + 2] = year, tonumber(stored[k] or 0) + years[year]
      if not stored[k] then added[#added + 1], added[#added + 2] = year, year end
    end
    redis.call('HSET', counts, unpack(counted))
    if #added > 0 then redis.call('ZADD', order, unpack(added)) end
  end
  tally_total(p, kind, name, total)
end
-- Records to add, name -> {years = {year -> records}, total}.
local function count_record(pending, name, year)
  local entry = pending[name]
  if not entry then
    entry = {years = {}, total = 0}
    pending[name] = entry
  end
  entry.years[year] = (entry.years[year] or 0) + 1
  entry.total = entry.total + 1
end
local function write_tallies(p, kind, pending)
  for name, entry in pairs(pending) do tally_years(p, kind, name, entry.years, entry.total) end
end
