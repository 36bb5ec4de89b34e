-- KEYS: series, the country's indicators, countries, size, year ranges. ARGV: year, country,
-- indicator, prefix, and optionally the value expected stored ('' for none). Returns 1 for a record removed, 0
-- for none, {'changed'} when the value stored is not the one expected: nothing removed. A record removed is
-- counted in the generation and taken from the facet tallies (tally.lua).
if ARGV[5] and (redis.call('HGET', KEYS[1], ARGV[1]) or '') ~= ARGV[5] then return {'changed'} end
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('DECR', KEYS[4])
count_write(ARGV[4])
redis.call('HDEL', KEYS[5], ARGV[2] .. '/' .. ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[3])
  if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('ZREM', KEYS[3], ARGV[2]) end
end
if tallied(ARGV[4], ARGV[2], ARGV[3]) then
  tally_record(ARGV[4], 'country', ARGV[2], ARGV[1], -1)
  tally_record(ARGV[4], 'indicator', ARGV[3], ARGV[1], -1)
end
return 1
