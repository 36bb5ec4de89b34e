-- KEYS: series, the country's indicators, countries, size. ARGV: year, value, country, indicator.
local created = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if created == 1 then
  redis.call('INCR', KEYS[4])
  if redis.call('HLEN', KEYS[1]) == 1 then
    redis.call('ZADD', KEYS[2], 0, ARGV[4])
    redis.call('ZADD', KEYS[3], 0, ARGV[3])
  end
end
return created
