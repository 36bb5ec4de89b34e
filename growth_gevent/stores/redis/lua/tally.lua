-- The facet tallies (keys.py): each country's and each indicator's records, per year, and its years in
-- order, kept by every script that creates or removes records, in the same step. Prepended (after
-- order.lua) to the scripts that write records, build the tallies or read them.
local LAYOUT_VERSION = {{LAYOUT_VERSION}}
local function current(p)
  return tonumber(redis.call('GET', p .. 'version') or 0) >= LAYOUT_VERSION
end
-- Whether a write to (country, indicator) goes into the tallies: every write once the layout is current;
-- while build_tallies.lua builds them, a write to a series it has read (up to its cursor, in its order);
-- before that, none (the build counts what it finds). Read once a script. A store without records has
-- nothing to build: ``empty()`` (nil for a removal) says whether it held none but this write's, which then
-- makes the layout current.
local tallying  -- true, false, or the build's cursor {country, indicator}
local function tallied(p, country, indicator, empty)
  if tallying == nil then
    local cursor = not current(p) and redis.call('HMGET', p .. 'tally_build', 'country', 'indicator')
    if not cursor then
      tallying = true
    elseif cursor[1] then
      tallying = cursor
    elseif empty and empty() then
      redis.call('SET', p .. 'version', LAYOUT_VERSION)
      tallying = true
    else
      tallying = false
    end
  end
  if type(tallying) ~= 'table' then return tallying end
  local country_read, indicator_read = tallying[1], tallying[2]
  return before(country, country_read) or (country == country_read and not before(indicator_read, indicator))
end
-- Adds ``years`` (year -> records, more or fewer; ``total`` their sum) to the tally of ``name`` of ``kind``
-- ('country' or 'indicator'): a year whose records reach 0 leaves the order, a name's tally goes with its
-- last record. One year (a put, a delete) is one HINCRBY; many, only ever added (a bulk chunk's, the
-- build's), are read and written together, a few commands a name whatever its years, YEARS_AT_ONCE at a
-- time (unpack() takes at most 8,000 values).
local YEARS_AT_ONCE = 2000
local function tally(p, kind, name, years, total)
  local counts, order = p .. 'tally:' .. kind .. ':' .. name, p .. 'tally:' .. kind .. '-years:' .. name
  local listed = {}
  for year in pairs(years) do listed[#listed + 1] = year end
  if #listed == 1 then
    local year, records = listed[1], years[listed[1]]
    local now = redis.call('HINCRBY', counts, year, records)
    if now <= 0 then
      redis.call('HDEL', counts, year)
      redis.call('ZREM', order, year)
    elseif now == records then
      redis.call('ZADD', order, year, year)
    end
  end
  for first = 1, #listed > 1 and #listed or 0, YEARS_AT_ONCE do
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
  local now = redis.call('HINCRBY', counts, 'records', total)
  if now <= 0 then
    redis.call('DEL', counts, order)
    if kind == 'indicator' then redis.call('ZREM', p .. 'indicators', name) end
  elseif now == total and kind == 'indicator' then
    redis.call('ZADD', p .. 'indicators', 0, name)
  end
end
-- Many records' tallies added up before they are written, one HINCRBY a name and year: name ->
-- {years = {year -> records}, total}.
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
  for name, entry in pairs(pending) do tally(p, kind, name, entry.years, entry.total) end
end
