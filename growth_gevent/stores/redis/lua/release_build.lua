-- KEYS: the lock of the tallies' build (build_tallies.lua). ARGV: a builder's token. Releases the lock if that
-- builder holds it, so that a worker stopping mid-build (the supervisor, which closes its store once it
-- started them) lets another resume at once, not once the lock lapses. Returns 1 if released, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
