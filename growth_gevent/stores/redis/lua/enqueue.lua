-- KEYS: bulk, jobs, size, remaining; ARGV: prefix, initial data (1 or 0), record count, queue bound,
-- chunk... Returns {job, pending}: job 0 when nothing was queued (initial data not taken, or the
-- queue full), pending the records accepted and not applied, this job's included.
-- The initial-data rule and the queue bound (Store.submit_bulk), decided as MemoryStore.submit_bulk does.
local pending = tonumber(redis.call('HGET', KEYS[1], 'pending') or 0)
local count = tonumber(ARGV[3])
if ARGV[2] == '1' then
  if tonumber(redis.call('GET', KEYS[3]) or 0) > 0 or redis.call('LLEN', KEYS[2]) > 0
      or redis.call('HSETNX', KEYS[1], 'initial', 1) == 0 then
    return {0, pending}
  end
elseif pending + count > tonumber(ARGV[4]) then
  return {0, pending}
end
local id = redis.call('HINCRBY', KEYS[1], 'accepted', 1)
local job = ARGV[1] .. 'job:' .. id
for k = 5, #ARGV do redis.call('RPUSH', job, ARGV[k]) end
redis.call('RPUSH', KEYS[2], id)
redis.call('HSET', KEYS[4], id, count)
redis.call('HSET', KEYS[1], 'latest_total', count, 'latest_applied', 0)
return {id, redis.call('HINCRBY', KEYS[1], 'pending', count)}
