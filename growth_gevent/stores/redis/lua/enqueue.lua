-- KEYS: bulk, jobs, size, remaining; ARGV: prefix, initial data (1 or 0), record count, queue bound, the
-- most records the store holds, chunk... Returns {job, pending, size}: job 0 when nothing was queued
-- (initial data not taken, the queue full, or the store: stored + pending + these past the most), pending
-- the records accepted and not applied (this job's included), size those stored.
-- The initial-data rule, the queue bound and the record cap (Store.submit_bulk), decided as
-- MemoryStore.submit_bulk does, in the same step as the job is queued: the same cap across workers.
local pending = tonumber(redis.call('HGET', KEYS[1], 'pending') or 0)
local size = tonumber(redis.call('GET', KEYS[3]) or 0)
local count = tonumber(ARGV[3])
if ARGV[2] == '1' then
  if size > 0 or redis.call('LLEN', KEYS[2]) > 0 or redis.call('HSETNX', KEYS[1], 'initial', 1) == 0 then
    return {0, pending, size}
  end
elseif pending + count > tonumber(ARGV[4]) or size + pending + count > tonumber(ARGV[5]) then
  return {0, pending, size}
end
local id = redis.call('HINCRBY', KEYS[1], 'accepted', 1)
local job = ARGV[1] .. 'job:' .. id
for k = 6, #ARGV do redis.call('RPUSH', job, ARGV[k]) end
redis.call('RPUSH', KEYS[2], id)
redis.call('HSET', KEYS[4], id, count)
redis.call('HSET', KEYS[1], 'latest_total', count, 'latest_applied', 0)
return {id, redis.call('HINCRBY', KEYS[1], 'pending', count), size}
