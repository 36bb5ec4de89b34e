-- KEYS: job records, remaining. ARGV: job. Returns {} for a job unknown or forgotten (enqueue.lua keeps the
-- last jobs'), else {state, records applied, total}: in progress while queued, failed once given up on.
local total = redis.call('HGET', KEYS[1], ARGV[1])
if not total then return {} end
total = tonumber(total)
local remaining = redis.call('HGET', KEYS[2], ARGV[1])
if remaining then return {'in progress', total - tonumber(remaining), total} end
local failed = redis.call('HGET', KEYS[1], ARGV[1] .. ':failed')
if failed then return {'failed', tonumber(failed), total} end
return {'complete', total, total}
