-- ARGV: prefix, country, indicator ('' for any), resume country ('' for the first), budget, and 'country' or
-- 'indicator': what to count by. Reads the series of the countries after the resume country (only of
-- ``country`` when given), of ``indicator`` when given, in order, until it has examined ``budget`` (each
-- series counting 1, each year read to find a series' range 1 more). Returns {{name, records, first year,
-- last year, ...}, resume country}: per country or indicator of the series read, their records (HLEN) and
-- year range (each series' from growth:years, else from its years, then kept there; a write that adds or
-- removes a year drops it), and the last country read, or '' when there is none after it. One row a name,
-- not a series: a script over 10,000 single-record series answers 1,000 rows, not 10,000.
local p, only_country, only_indicator = ARGV[1], ARGV[2], ARGV[3]
local resume, budget, by_country = ARGV[4], tonumber(ARGV[5]), ARGV[6] == 'country'
local totals, names = {}, {}
local ranges = p .. 'years'
local countries = only_country ~= '' and {only_country} or redis.call('ZRANGEBYLEX', p .. 'countries',
  resume == '' and '-' or '(' .. resume, '+', 'LIMIT', 0, budget)
local examined = 0
local function rows()
  local flat = {}
  for _, name in ipairs(names) do
    local counts = totals[name]
    local n = #flat
    flat[n + 1], flat[n + 2], flat[n + 3], flat[n + 4] = name, counts[1], counts[2], counts[3]
  end
  return flat
end
for _, country in ipairs(countries) do
  local indicators = only_indicator ~= '' and {only_indicator} or redis.call('ZRANGE', p .. 'i:' .. country, 0, -1)
  for _, indicator in ipairs(indicators) do
    local series = p .. 's:' .. country .. '/' .. indicator
    local count = redis.call('HLEN', series)
    if count > 0 then
      local field = country .. '/' .. indicator
      local first, last
      local range = redis.call('HGET', ranges, field)
      if range then
        first, last = string.match(range, '^(%S+) (%S+)$')
        first, last = tonumber(first), tonumber(last)
      else
        -- Years are at most nine digits (MAX_YEAR): exact as Lua numbers.
        for _, year in ipairs(redis.call('HKEYS', series)) do
          local number = tonumber(year)
          if not first or number < first then first = number end
          if not last or number > last then last = number end
        end
        examined = examined + count
        -- Best effort: a Redis refusing writes (out of memory, read-only) still answers the read.
        redis.pcall('HSET', ranges, field, string.format('%d %d', first, last))
      end
      local name = by_country and country or indicator
      local counts = totals[name]
      if not counts then
        totals[name] = {count, first, last}
        names[#names + 1] = name
      else
        counts[1] = counts[1] + count
        if first < counts[2] then counts[2] = first end
        if last > counts[3] then counts[3] = last end
      end
    end
    examined = examined + 1
  end
  if examined >= budget and only_country == '' then return {rows(), country} end
end
return {rows(), ''}
