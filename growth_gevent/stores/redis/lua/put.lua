-- KEYS: series, the country's indicators, countries, size. ARGV: year, value, country, indicator, the most
-- records the store holds. Returns 1 for a record created, 0 for one replaced, or {'full', size} when the
-- key is new and the store holds its most already: nothing written (Store.put's StoreFull).
local size = tonumber(redis.call('GET', KEYS[4]) or 0)
if size >= tonumber(ARGV[5]) and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return {'full', size}
end
local created = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if created == 1 then
  redis.call('INCR', KEYS[4])
  if redis.call('HLEN', KEYS[1]) == 1 then
    redis.call('ZADD', KEYS[2], 0, ARGV[4])
    redis.call('ZADD', KEYS[3], 0, ARGV[3])
  end
end
return created
