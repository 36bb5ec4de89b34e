-- ARGV: prefix, country, indicator, first, last ('' for not given), skip, room, after country, after
-- indicator, budget, series cost. Reads series in order from the one after (after country, after
-- indicator), or from the first when those are '', until it has examined ``budget`` records, each series
-- counting ``series cost`` more: it skips ``skip`` matching
-- records, then takes up to ``room``. Returns {matching, {country, indicator, year, value, ...}, country,
-- indicator}: how many records of the series read match, the page part, and the last series read, or
-- '', '' when there is none after it. Years are compared as decimal integers of any length.
local function less(a, b)
  local a_negative, b_negative = a:byte(1) == 45, b:byte(1) == 45
  if a_negative ~= b_negative then return a_negative end
  if #a ~= #b then return (#a < #b) ~= a_negative end
  if a_negative then return a > b end
  return a < b
end
local p, first, last = ARGV[1], ARGV[4], ARGV[5]
local skip, room = tonumber(ARGV[6]), tonumber(ARGV[7])
local after_country, after_indicator, budget = ARGV[8], ARGV[9], tonumber(ARGV[10])
local series_cost = tonumber(ARGV[11])
-- Up to 15 digits a number is exact as a Lua number: such years are compared as numbers, which is
-- three times faster than less(); a longer year or bound falls back to less().
local exact = #first <= 15 and #last <= 15
local lowest = first == '' and -math.huge or tonumber(first)
local highest = last == '' and math.huge or tonumber(last)
-- Each series costs at least series_cost >= 1, so budget + 1 names (the first may be finished) are enough.
-- Paging order, which MemoryStore.records keeps too: country, indicator (by bytes: the code point order
-- of their UTF-8), then year as a number.
local countries = ARGV[2] ~= '' and {ARGV[2]} or redis.call('ZRANGEBYLEX', p .. 'countries',
  after_country == '' and '-' or '[' .. after_country, '+', 'LIMIT', 0, budget + 1)
local total, page, examined = 0, {}, 0
for _, country in ipairs(countries) do
  local after = country == after_country and after_indicator or ''
  local indicators
  if ARGV[3] ~= '' then
    indicators = after == '' and {ARGV[3]} or {}
  else
    indicators = redis.call('ZRANGEBYLEX', p .. 'i:' .. country, after == '' and '-' or '(' .. after, '+',
      'LIMIT', 0, budget)
  end
  for _, indicator in ipairs(indicators) do
    local series = p .. 's:' .. country .. '/' .. indicator
    local years, count
    if first == '' and last == '' then
      count = redis.call('HLEN', series)
    elseif first == last then  -- the single-year shortcut, taken by the memory store's _years_in too
      years = redis.call('HEXISTS', series, first) == 1 and {first} or {}
      count = #years
    else
      years, count = {}, 0
      local all = redis.call('HKEYS', series)
      for _, year in ipairs(all) do
        local number = exact and #year <= 15 and tonumber(year)
        if number then
          if number >= lowest and number <= highest then count = count + 1; years[count] = year end
        elseif (first == '' or not less(year, first)) and (last == '' or not less(last, year)) then
          count = count + 1; years[count] = year
        end
      end
      examined = examined + #all
    end
    examined = examined + series_cost
    if count > skip and room > 0 then
      years = years or redis.call('HKEYS', series)
      table.sort(years, less)
      local stop = math.min(#years, skip + room)
      for k = skip + 1, stop do
        local n = #page
        page[n + 1], page[n + 2], page[n + 3] = country, indicator, years[k]
        page[n + 4] = redis.call('HGET', series, years[k])
      end
      room = room - (stop - skip)
    end
    skip = math.max(0, skip - count)
    total = total + count
    if examined >= budget then return {total, page, country, indicator} end
  end
end
return {total, page, '', ''}
