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
-- The keys of the tally of ``name`` of ``kind`` ('country' or 'indicator'): its counts and its years' order.
local function tally_keys(p, kind, name)
  return p .. 'tally:' .. kind .. ':' .. name, p .. 'tally:' .. kind .. '-years:' .. name
end
-- Counts ``total`` records more (or fewer) in ``name``'s tally, its years counted already: a name's tally
-- goes with its last record, and an indicator is listed while it has records.
local function tally_total(p, kind, name, total)
  local counts, order = tally_keys(p, kind, name)
  local now = redis.call('HINCRBY', counts, 'records', total)
  if now <= 0 then
    redis.call('DEL', counts, order)
    if kind == 'indicator' then redis.call('ZREM', p .. 'indicators', name) end
  elseif now == total and kind == 'indicator' then
    redis.call('ZADD', p .. 'indicators', 0, name)
  end
end
-- One record more (``records`` 1) or fewer (-1) of ``year`` in ``name``'s tally: a year whose records reach 0
-- leaves the order.
local function tally_record(p, kind, name, year, records)
  local counts, order = tally_keys(p, kind, name)
  local now = redis.call('HINCRBY', counts, year, records)
  if now <= 0 then
    redis.call('HDEL', counts, year)
    redis.call('ZREM', order, year)
  elseif now == records then
    redis.call('ZADD', order, year, year)
  end
  tally_total(p, kind, name, records)
end
