-- KEYS: bulk, jobs, size, remaining, job records; ARGV: prefix, initial data (1 or 0), record count, queue
-- bound, the most records the store holds, the jobs whose records are kept, chunk... Returns {job, pending, held, new}: job 0 when nothing was queued
-- (initial data not taken, the queue full, or the store: held + new past the most); pending the records
-- accepted and not applied (this job's included), held those stored plus the new keys of the jobs waiting,
-- new this job's new keys.
-- The initial-data rule, the queue bound and the record cap (Store.submit_bulk), decided as
-- MemoryStore.submit_bulk does, in the same step as the job is queued: the same cap across workers.
-- A job's new keys are those neither stored (s:) nor counted by a job waiting (new:), each once; they are
-- counted in new:{COUNTRY}/{INDICATOR} (year -> job) and bulk's 'new' until applied or given up on.
local pending = tonumber(redis.call('HGET', KEYS[1], 'pending') or 0)
local held = tonumber(redis.call('GET', KEYS[3]) or 0) + tonumber(redis.call('HGET', KEYS[1], 'new') or 0)
local count = tonumber(ARGV[3])
local p = ARGV[1]
local new, added = {}, 0  -- series name -> {year = true} of this job's new keys; how many
if ARGV[2] == '1' then
  if held > 0 or redis.call('LLEN', KEYS[2]) > 0 or redis.call('HSETNX', KEYS[1], 'initial', 1) == 0 then
    return {0, pending, held, 0}
  end
else
  if pending + count > tonumber(ARGV[4]) then return {0, pending, held, 0} end
  for k = 7, #ARGV do
    local groups = cjson.decode(ARGV[k])
    for g = 1, #groups, 3 do
      local name, fields, years = groups[g] .. '/' .. groups[g + 1], groups[g + 2], {}
      for f = 1, #fields, 2 do years[#years + 1] = fields[f] end
      local stored = redis.call('HMGET', p .. 's:' .. name, unpack(years))
      local waiting = redis.call('HMGET', p .. 'new:' .. name, unpack(years))
      for y = 1, #years do
        if not stored[y] and not waiting[y] then
          local seen = new[name]
          if not seen then seen = {}; new[name] = seen end
          if not seen[years[y]] then seen[years[y]] = true; added = added + 1 end
        end
      end
    end
  end
  if held + added > tonumber(ARGV[5]) then return {0, pending, held, added} end
end
local id = redis.call('HINCRBY', KEYS[1], 'accepted', 1)
local job = p .. 'job:' .. id
for k = 7, #ARGV do redis.call('RPUSH', job, ARGV[k]) end
redis.call('RPUSH', KEYS[2], id)
redis.call('HSET', KEYS[4], id, count)
-- What job_status.lua reports on: the last jobs kept, each job's total (and records applied if it failed).
local forgotten = id - tonumber(ARGV[6])
redis.call('HSET', KEYS[5], id, count)
redis.call('HDEL', KEYS[5], forgotten, forgotten .. ':failed')
redis.call('HSET', KEYS[1], 'latest_total', count, 'latest_applied', 0)
for name, years in pairs(new) do
  local fields = {}
  for year in pairs(years) do
    fields[#fields + 1] = year
    fields[#fields + 1] = id
    if #fields == 4000 then  -- unpack() takes at most 8,000 values
      redis.call('HSET', p .. 'new:' .. name, unpack(fields))
      fields = {}
    end
  end
  if #fields > 0 then redis.call('HSET', p .. 'new:' .. name, unpack(fields)) end
end
if added > 0 then redis.call('HINCRBY', KEYS[1], 'new', added) end
return {id, redis.call('HINCRBY', KEYS[1], 'pending', count), held + added, added}
