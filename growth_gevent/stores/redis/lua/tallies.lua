-- ARGV: prefix, 'country' or 'indicator', name ('' for every one), resume name ('' for the first), budget.
-- The facet of the countries or the indicators from their tallies (tally.lua), in name order from after the
-- resume name, ``budget`` names at most. Returns {{name, records, first year, last year, ...}, the last name
-- read or '' when there is none after it}, or {'old'} when the store's tallies are not (yet) kept: the
-- caller reads the series instead (facets.lua).
local p, kind, only, resume, budget = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if not current(p) then return {'old'} end
local names = only ~= '' and {only} or redis.call('ZRANGEBYLEX', p .. (kind == 'country' and 'countries' or 'indicators'),
  resume == '' and '-' or '(' .. resume, '+', 'LIMIT', 0, budget)
local rows = {}
for _, name in ipairs(names) do
  local counts, order = tally_keys(p, kind, name)
  local records = redis.call('HGET', counts, 'records')
  if records then
    local n = #rows
    rows[n + 1], rows[n + 2] = name, tonumber(records)
    rows[n + 3] = tonumber(redis.call('ZRANGE', order, 0, 0)[1])
    rows[n + 4] = tonumber(redis.call('ZRANGE', order, -1, -1)[1])
  end
end
return {rows, (only == '' and #names == budget) and names[#names] or ''}
