-- KEYS: series, the country's indicators, countries, size, the series' new keys counted by jobs waiting
-- (enqueue.lua), bulk, year ranges. ARGV: year, value, country, indicator, the most records the store
-- holds, prefix, and optionally the value expected stored ('' for none). Returns 1 for a record created, 0 for
-- one replaced, {'changed'} when the value stored is not the one expected, or {'full', held} when the key is
-- new, no job waiting counted it, and the store holds its most already with the new keys of those jobs:
-- nothing written for either (StoreFull). A record created is counted in the generation and the facet tallies
-- (tally.lua).
if ARGV[7] and (redis.call('HGET', KEYS[1], ARGV[1]) or '') ~= ARGV[7] then return {'changed'} end
local held = tonumber(redis.call('GET', KEYS[4]) or 0) + tonumber(redis.call('HGET', KEYS[6], 'new') or 0)
if held >= tonumber(ARGV[5]) and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0
    and redis.call('HEXISTS', KEYS[5], ARGV[1]) == 0 then
  return {'full', held}
end
local created = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if created == 1 then
  local size = redis.call('INCR', KEYS[4])
  count_write(ARGV[6])
  redis.call('HDEL', KEYS[7], ARGV[3] .. '/' .. ARGV[4])
  if redis.call('HDEL', KEYS[5], ARGV[1]) == 1 then redis.call('HINCRBY', KEYS[6], 'new', -1) end
  if redis.call('HLEN', KEYS[1]) == 1 then
    redis.call('ZADD', KEYS[2], 0, ARGV[4])
    redis.call('ZADD', KEYS[3], 0, ARGV[3])
  end
  if tallied(ARGV[6], ARGV[3], ARGV[4], function () return size == 1 end) then
    tally_record(ARGV[6], 'country', ARGV[3], ARGV[1], 1)
    tally_record(ARGV[6], 'indicator', ARGV[4], ARGV[1], 1)
  end
end
return created
