-- ARGV: prefix, the builder's token, the lock's milliseconds, budget, series cost, the pause's milliseconds.
-- One step of building the facet tallies (tally.lua) of a store written before them, or found wrong: first,
-- while the layout is current, the self-check (drift(), O(1)), which drops them when they are wrong. A build
-- starts by dropping whatever tallies there are (growth:indicators, the counts, then every growth:tally:*
-- key, ``budget`` keys' worth of SCAN a step), while no write keeps any (phase 'clear'); then it reads series
-- in order from after the cursor (growth:tally_build), each series counting ``series cost`` and its years 1
-- each, until it has examined ``budget``, adds what it read to the tallies and moves the cursor there; the
-- writes meanwhile count themselves in the tallies only for the series up to the cursor (tallied()), so each
-- record is counted once. The last step sets the layout's version. Under a lock (taken here, kept ``lock`` ms
-- a step) so that one worker builds at a time, though steps of two would still count each record once.
-- Tallies found wrong within ``pause`` of the end of the last build are counted again only then
-- (growth:tally_built): a worker of an older version that goes on writing does not keep Redis building them.
-- Returns {'done', series read, 1} for the step that finished, {'done', 0, 0} when the tallies are current
-- and right (or the store holds nothing to count), {'started', why they were dropped or '', records stored}
-- for the first step, {'more', series read}, or {'busy'} while another worker holds the lock or the pause
-- lasts.
local p, token = ARGV[1], ARGV[2]
if current(p) then
  local why = drift(p)
  if not why then return {'done', 0, 0} end
  drop_tallies(p, why)
end
local lock, state = p .. 'tally_build:lock', p .. 'tally_build'
local build = redis.call('HMGET', state, 'phase', 'scan', 'country', 'indicator', 'why')
if not build[1] and build[5] and redis.call('EXISTS', p .. 'tally_built') == 1 then return {'busy'} end
local holder = redis.call('GET', lock)
if holder and holder ~= token then return {'busy'} end
redis.call('SET', lock, token, 'PX', ARGV[3])
local budget, series_cost = tonumber(ARGV[4]), tonumber(ARGV[5])
if not build[1] and tonumber(redis.call('GET', p .. 'size') or 0) == 0 and start_empty(p, build[5]) then
  redis.call('DEL', lock)
  return {'done', 0, 0}
end
if not build[1] then
  -- The counts start from what the store holds now; every write counted in the generation from now on is of a
  -- version that keeps the tallies, or the check after the build finds it.
  redis.call('DEL', p .. 'indicators', p .. 'tally_records', state)
  redis.call('SET', p .. 'tally_generation', redis.call('GET', p .. 'generation') or 0)
  redis.call('HSET', state, 'phase', 'clear', 'scan', '0')
  return {'started', build[5] or '', tonumber(redis.call('GET', p .. 'size') or 0)}
end
if build[1] == 'clear' then
  local found = redis.call('SCAN', build[2], 'MATCH', p .. 'tally:*', 'COUNT', budget)
  if #found[2] > 0 then redis.call('UNLINK', unpack(found[2])) end
  if found[1] == '0' then
    redis.call('HSET', state, 'phase', 'count')
    redis.call('HDEL', state, 'scan')
  else
    redis.call('HSET', state, 'scan', found[1])
  end
  return {'more', 0}
end
local resume_country, resume_indicator = build[3] or '', build[4] or ''
-- Each series costs at least series_cost >= 1, so budget + 1 countries (the first may be finished) are enough.
local countries = redis.call('ZRANGEBYLEX', p .. 'countries', resume_country == '' and '-' or '[' .. resume_country,
  '+', 'LIMIT', 0, budget + 1)
local by_country, by_indicator = {}, {}
local examined, read = 0, 0
for _, country in ipairs(countries) do
  local after = country == resume_country and resume_indicator or ''
  local indicators = redis.call('ZRANGEBYLEX', p .. 'i:' .. country, after == '' and '-' or '(' .. after, '+',
    'LIMIT', 0, budget)
  for _, indicator in ipairs(indicators) do
    local years = redis.call('HKEYS', p .. 's:' .. country .. '/' .. indicator)
    for _, year in ipairs(years) do
      count_record(by_country, country, year)
      count_record(by_indicator, indicator, year)
    end
    read = read + 1
    examined = examined + series_cost + #years
    if examined >= budget then
      write_tallies(p, 'country', by_country)
      write_tallies(p, 'indicator', by_indicator)
      -- Not when writing them found them wrong (edited meanwhile): the build starts again.
      if tallying ~= false then redis.call('HSET', state, 'country', country, 'indicator', indicator) end
      return {'more', read}
    end
  end
end
write_tallies(p, 'country', by_country)
write_tallies(p, 'indicator', by_indicator)
if tallying == false then return {'more', read} end
redis.call('SET', p .. 'version', LAYOUT_VERSION)
redis.call('SET', p .. 'tally_built', 1, 'PX', ARGV[6])
redis.call('DEL', state, lock)
return {'done', read, 1}
