-- ARGV: prefix, country, indicator ('' for any), resume country ('' for the first), budget. Reads the
-- series of the countries after the resume country (only of ``country`` when given), of ``indicator``
-- when given, in order, until it has examined ``budget`` (each series counting 1, each year read to find a
-- series' range 1 more). Returns {{country, indicator, records, first year, last year, ...}, resume
-- country}: of each series read, its count (HLEN) and year range (from growth:years, else from its years,
-- then kept there; a write that adds or removes a year drops it), and the last country read, or '' when
-- there is none after it.
local p, only_country, only_indicator = ARGV[1], ARGV[2], ARGV[3]
local resume, budget = ARGV[4], tonumber(ARGV[5])
local ranges = p .. 'years'
local countries = only_country ~= '' and {only_country} or redis.call('ZRANGEBYLEX', p .. 'countries',
  resume == '' and '-' or '(' .. resume, '+', 'LIMIT', 0, budget)
local rows, examined = {}, 0
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
      local n = #rows
      rows[n + 1], rows[n + 2], rows[n + 3], rows[n + 4], rows[n + 5] = country, indicator, count, first, last
    end
    examined = examined + 1
  end
  if examined >= budget and only_country == '' then return {rows, country} end
end
return {rows, ''}
