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
-- makes the layout current, unless a build is due or tallies are left (growth:indicators).
local tallying  -- true, false, or the build's cursor {country, indicator}
-- Whether the tallies of a store without records can be kept from now on: no build ``due`` (under way, or
-- tallies dropped, to clear first) and none left (an indicator listed); if so, they are.
local function start_empty(p, due)
  if due or redis.call('EXISTS', p .. 'indicators') == 1 then return false end
  redis.call('SET', p .. 'version', LAYOUT_VERSION)
  redis.call('SET', p .. 'tally_generation', redis.call('GET', p .. 'generation') or 0)
  redis.call('DEL', p .. 'tally_records')
  return true
end
local function tallied(p, country, indicator, empty)
  if tallying == nil then
    local build = not current(p) and redis.call('HMGET', p .. 'tally_build', 'country', 'indicator', 'phase', 'why')
    if not build then
      tallying = true
    elseif build[1] then
      tallying = {build[1], build[2]}
    else
      tallying = (empty and empty() and start_empty(p, build[3] or build[4])) or false
    end
  end
  if type(tallying) ~= 'table' then return tallying end
  local country_read, indicator_read = tallying[1], tallying[2]
  return before(country, country_read) or (country == country_read and not before(indicator_read, indicator))
end
-- Counts a write that creates or removes records (growth:generation), and that its version keeps the tallies
-- (growth:tally_generation): a write of an older version counts only the first.
local function count_write(p)
  redis.call('INCR', p .. 'generation')
  redis.call('INCR', p .. 'tally_generation')
end
-- Why the tallies are wrong, or nil: they count other records than the store holds, or a write counted in
-- the generation kept none (an older version's, or made by hand). O(1): a few GETs.
local function drift(p)
  local figures = redis.call('MGET', p .. 'size', p .. 'tally_records', p .. 'generation', p .. 'tally_generation')
  local size, records = tonumber(figures[1] or 0), tonumber(figures[2] or 0)
  local writes, kept = tonumber(figures[3] or 0), tonumber(figures[4] or 0)
  if records ~= size then
    return string.format('the tallies count %d records, the store holds %d', records, size)
  end
  if kept ~= writes then
    return string.format('%d of the %d writes that created or removed records kept no tallies', writes - kept, writes)
  end
end
-- The tallies found wrong (``why``): the layout is no longer current, so that no write keeps them and the
-- facets are read from the series, until build_tallies.lua has dropped them and counted them again; it says
-- ``why`` in the log. The rest of this script keeps no tally.
local function drop_tallies(p, why)
  redis.call('DEL', p .. 'version', p .. 'tally_build')
  redis.call('HSET', p .. 'tally_build', 'why', why)
  tallying = false
end
-- The keys of the tally of ``name`` of ``kind`` ('country' or 'indicator'): its counts and its years' order.
local function tally_keys(p, kind, name)
  return p .. 'tally:' .. kind .. ':' .. name, p .. 'tally:' .. kind .. '-years:' .. name
end
-- Counts ``total`` records more (or fewer) in ``name``'s tally, its years counted already: a name's tally
-- goes with its last record, and an indicator is listed while it has records. A count below zero, or
-- records left without years (or none with years), is drift (drop_tallies): looked at (ZCARD) when the
-- count reaches 0 or a year left (``year_left``).
local function tally_total(p, kind, name, total, year_left)
  if tallying == false then return end
  local counts, order = tally_keys(p, kind, name)
  local now = redis.call('HINCRBY', counts, 'records', total)
  if kind == 'country' then redis.call('INCRBY', p .. 'tally_records', total) end
  if now < 0 or ((now == 0 or year_left) and (now == 0) ~= (redis.call('ZCARD', order) == 0)) then
    return drop_tallies(p, string.format('%s %s would have %d records, in %d years', kind, name, now,
      redis.call('ZCARD', order)))
  end
  if now == 0 then
    redis.call('DEL', counts, order)
    if kind == 'indicator' then redis.call('ZREM', p .. 'indicators', name) end
  elseif now == total and kind == 'indicator' then
    redis.call('ZADD', p .. 'indicators', 0, name)
  end
end
-- One record more (``records`` 1) or fewer (-1) of ``year`` in ``name``'s tally: a year whose records reach 0
-- leaves the order; below 0 is drift.
local function tally_record(p, kind, name, year, records)
  if tallying == false then return end
  local counts, order = tally_keys(p, kind, name)
  local now = redis.call('HINCRBY', counts, year, records)
  if now < 0 then
    return drop_tallies(p, string.format('%s %s would have %d records of %s', kind, name, now, year))
  elseif now == 0 then
    redis.call('HDEL', counts, year)
    redis.call('ZREM', order, year)
  elseif now == records then
    redis.call('ZADD', order, year, year)
  end
  tally_total(p, kind, name, records, now == 0)
end
