-- ARGV: prefix, the builder's token, the lock's milliseconds, budget, series cost. One step of building the
-- facet tallies (tally.lua) of a store written before them: reads series in order from after the cursor
-- (growth:tally_build), each series counting ``series cost`` and its years 1 each, until it has examined
-- ``budget``, adds what it read to the tallies and moves the cursor there; the writes meanwhile count
-- themselves in the tallies only for the series up to the cursor (tallied()), so each record is counted
-- once. The last step sets the layout's version. Under a lock (taken here, kept ``lock`` ms a step) so that
-- one worker builds at a time, though steps of two would still count each record once. Returns {'done',
-- series read, 1} for the step that finished, {'done', 0, 0} when there was nothing to build, {'more',
-- series read}, or {'busy'} while another worker holds the lock.
local p, token = ARGV[1], ARGV[2]
if current(p) then return {'done', 0, 0} end
local lock, state = p .. 'tally_build:lock', p .. 'tally_build'
local holder = redis.call('GET', lock)
if holder and holder ~= token then return {'busy'} end
redis.call('SET', lock, token, 'PX', ARGV[3])
local cursor = redis.call('HMGET', state, 'country', 'indicator')
local resume_country, resume_indicator = cursor[1] or '', cursor[2] or ''
local budget, series_cost = tonumber(ARGV[4]), tonumber(ARGV[5])
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
      redis.call('HSET', state, 'country', country, 'indicator', indicator)
      return {'more', read}
    end
  end
end
write_tallies(p, 'country', by_country)
write_tallies(p, 'indicator', by_indicator)
redis.call('SET', p .. 'version', LAYOUT_VERSION)
redis.call('DEL', state, lock)
return {'done', read, 1}
