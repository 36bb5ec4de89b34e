-- KEYS: the descriptions' hash. ARGV: field, text, field, text, ... (an empty text removes the field). Returns 1.
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
