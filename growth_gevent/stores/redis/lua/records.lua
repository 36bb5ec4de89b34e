-- ARGV: prefix, country, indicator, first, last ('' for not given), skip, room, resume country, resume
-- indicator, budget, series cost, and the page's cursor: '1' then its country, indicator and year, or ''
-- for none. Reads series in order from the one after (resume country, resume indicator), or from the first
-- when those are '', until it has examined ``budget`` records, each series counting ``series cost`` more:
-- of the matching records after the cursor (all of them without one) it skips ``skip``, then takes up to
-- ``room``. Returns {matching, {country, indicator, year, value, ...}, country, indicator, skip}: how many
-- records of the series read match (before the cursor too), the page part, the last series read, or '', ''
-- when there is none after it, and what is left to skip. Years are compared as decimal integers of any length.
local function less(a, b)
  local a_negative, b_negative = a:byte(1) == 45, b:byte(1) == 45
  if a_negative ~= b_negative then return a_negative end
  if #a ~= #b then return (#a < #b) ~= a_negative end
  if a_negative then return a > b end
  return a < b
end
-- Names are compared by before() (order.lua).
local p, first, last = ARGV[1], ARGV[4], ARGV[5]
local skip, room = tonumber(ARGV[6]), tonumber(ARGV[7])
local resume_country, resume_indicator, budget = ARGV[8], ARGV[9], tonumber(ARGV[10])
local series_cost = tonumber(ARGV[11])
local cursor = ARGV[12] == '1'
local cursor_country, cursor_indicator, cursor_year = ARGV[13], ARGV[14], ARGV[15]
-- Up to 15 digits a number is exact as a Lua number: such years are compared as numbers, which is
-- three times faster than less(); a longer year or bound falls back to less().
local exact = #first <= 15 and #last <= 15
local lowest = first == '' and -math.huge or tonumber(first)
local highest = last == '' and math.huge or tonumber(last)
-- Each series costs at least series_cost >= 1, so budget + 1 names (the first may be finished) are enough.
-- Paging order, which MemoryStore.records keeps too: country, indicator (by bytes: the code point order
-- of their UTF-8), then year as a number.
local countries = ARGV[2] ~= '' and {ARGV[2]} or redis.call('ZRANGEBYLEX', p .. 'countries',
  resume_country == '' and '-' or '[' .. resume_country, '+', 'LIMIT', 0, budget + 1)
local total, page, examined = 0, {}, 0
-- Series before the cursor's are counted, not read; once past it (in order) every later series is too.
local past_cursor = not cursor
for _, country in ipairs(countries) do
  local resume = country == resume_country and resume_indicator or ''
  local indicators
  if ARGV[3] ~= '' then
    indicators = resume == '' and {ARGV[3]} or {}
  else
    indicators = redis.call('ZRANGEBYLEX', p .. 'i:' .. country, resume == '' and '-' or '(' .. resume, '+',
      'LIMIT', 0, budget)
  end
  for _, indicator in ipairs(indicators) do
    local series = p .. 's:' .. country .. '/' .. indicator
    local years, count, sorted
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
    -- The records of this series that the page may hold: those after the cursor.
    local eligible = count
    if not past_cursor then
      if country == cursor_country and indicator == cursor_indicator then
        years = years or redis.call('HKEYS', series)
        table.sort(years, less)
        sorted = true
        local kept = {}
        for _, year in ipairs(years) do
          if less(cursor_year, year) then kept[#kept + 1] = year end
        end
        years, eligible = kept, #kept
        past_cursor = true
      elseif before(country, cursor_country) or (country == cursor_country and before(indicator, cursor_indicator)) then
        eligible = 0
      else
        past_cursor = true
      end
    end
    if eligible > skip and room > 0 then
      years = years or redis.call('HKEYS', series)
      if not sorted then table.sort(years, less) end
      local stop = math.min(#years, skip + room)
      for k = skip + 1, stop do
        local n = #page
        page[n + 1], page[n + 2], page[n + 3] = country, indicator, years[k]
        page[n + 4] = redis.call('HGET', series, years[k])
      end
      room = room - (stop - skip)
    end
    skip = math.max(0, skip - eligible)
    total = total + count
    if examined >= budget then return {total, page, country, indicator, skip} end
  end
end
return {total, page, '', '', skip}
