-- KEYS: jobs, bulk, size, countries, remaining, dead, dead errors, job records; ARGV: prefix, attempts per chunk.
-- Returns {'idle'} when nothing is queued, {'applied', records}, or, when the chunk failed,
-- {'failed', job, attempt, error} to be tried again or {'dead', job, attempt, error} once given up on.
-- The records it creates are counted in the facet tallies (tally.lua).
local id = redis.call('LINDEX', KEYS[1], 0)
if not id then return {'idle'} end
local p = ARGV[1]
local job = p .. 'job:' .. id
-- The years of a chunk's group, and the count of its keys (``years``) that a job waiting counted as new
-- (enqueue.lua) that it forgets: those of ``job`` only, or all of them (stored now, so counted by size).
local function years_of(fields)
  local years = {}
  for f = 1, #fields, 2 do years[#years + 1] = fields[f] end
  return years
end
local function forget_new_keys(country, indicator, years, job)
  local counted = p .. 'new:' .. country .. '/' .. indicator
  if job then
    local owners = redis.call('HMGET', counted, unpack(years))
    local own = {}
    for y = 1, #years do if owners[y] == job then own[#own + 1] = years[y] end end
    years = own
  end
  local forgotten = #years > 0 and redis.call('HDEL', counted, unpack(years)) or 0
  if forgotten > 0 then redis.call('HINCRBY', KEYS[2], 'new', -forgotten) end
end
local counting = tonumber(redis.call('HGET', KEYS[2], 'new') or 0) > 0
-- The tallies of the records created, added up per name and year, written once the chunk is (or failed).
local by_country, by_indicator = {}, {}
local function store_empty() return tonumber(redis.call('GET', KEYS[3]) or 0) == 0 end
local function apply(chunk)
  local r = cjson.decode(chunk)
  local count = 0
  for k = 1, #r, 3 do
    local country, indicator, fields = r[k], r[k + 1], r[k + 2]
    local series = p .. 's:' .. country .. '/' .. indicator
    -- The years created: all of a series that did not exist (or of one record that HSET adds), else those
    -- HMGET did not find before.
    local kept = tallied(p, country, indicator, store_empty)
    local years = (kept or counting) and years_of(fields)
    local stored = kept and #years > 1 and redis.call('EXISTS', series) == 1
      and redis.call('HMGET', series, unpack(years))
    local new = redis.call('HSET', series, unpack(fields))
    if new > 0 and kept then
      local seen = {}
      for y, year in ipairs(years) do
        if not (stored and stored[y]) and not seen[year] then
          seen[year] = true
          count_record(by_country, country, year)
          count_record(by_indicator, indicator, year)
        end
      end
    end
    if new > 0 then
      redis.call('INCRBY', KEYS[3], new)
      redis.call('HDEL', p .. 'years', country .. '/' .. indicator)
      count_write(p)
    end
    if counting then forget_new_keys(country, indicator, years, nil) end
    -- Indexed every time, not only when the series is new: a chunk applied again after a failure
    -- finds its records there already, and must still index them.
    redis.call('ZADD', p .. 'i:' .. country, 0, indicator)
    redis.call('ZADD', KEYS[4], 0, country)
    count = count + #fields / 2
  end
  return count
end
-- The chunk is removed after it is applied, and size grows as records are written: should the script
-- stop halfway, the chunk stays queued whole, is applied again, and size still counts every record once.
local chunk = redis.call('LINDEX', job, 0)
local count = 0
if chunk then
  local applied, result = pcall(apply, chunk)
  -- Also after a failure: the records written before it are stored, and will not be created again.
  write_tallies(p, 'country', by_country)
  write_tallies(p, 'indicator', by_indicator)
  if not applied then
    -- A Lua error is a string; a Redis error, a string or a table {err = ...} depending on the version.
    local message = type(result) == 'table' and result.err or tostring(result)
    -- A write that the whole server refuses (out of memory, read-only, failing to save) refuses this
    -- count too, so the script fails as a whole: the chunk waits for the server, no attempt spent.
    local attempt = redis.call('HINCRBY', KEYS[2], 'attempts', 1)
    if attempt < tonumber(ARGV[2]) then return {'failed', id, attempt, message} end
    -- Given up on: the new keys it counted will not be added.
    if counting then
      for _, rest in ipairs(redis.call('LRANGE', job, 0, -1)) do
        pcall(function ()  -- a chunk that cannot be read counted no key either
          local r = cjson.decode(rest)
          for k = 1, #r, 3 do forget_new_keys(r[k], r[k + 1], years_of(r[k + 2]), id) end
        end)
      end
    end
    local remaining = tonumber(redis.call('HGET', KEYS[5], id) or 0)
    if redis.call('HEXISTS', KEYS[8], id) == 1 then
      redis.call('HSET', KEYS[8], id .. ':failed', redis.call('HGET', KEYS[8], id) - remaining)
    end
    redis.call('RENAME', job, KEYS[6] .. ':' .. id)
    redis.call('RPUSH', KEYS[6], id)
    redis.call('HSET', KEYS[7], id, message)
    redis.call('LPOP', KEYS[1])
    redis.call('HINCRBY', KEYS[2], 'pending', -remaining)
    redis.call('HDEL', KEYS[5], id)
    redis.call('HDEL', KEYS[2], 'attempts')
    redis.call('HINCRBY', KEYS[2], 'failed', 1)
    return {'dead', id, attempt, message}
  end
  count = result
  redis.call('LPOP', job)
  redis.call('HDEL', KEYS[2], 'attempts')
  redis.call('HINCRBY', KEYS[2], 'records', count)
  redis.call('HINCRBY', KEYS[2], 'pending', -count)
  redis.call('HINCRBY', KEYS[5], id, -count)
  if redis.call('HGET', KEYS[2], 'accepted') == id then
    redis.call('HINCRBY', KEYS[2], 'latest_applied', count)
  end
end
if redis.call('EXISTS', job) == 0 then
  redis.call('LPOP', KEYS[1])
  redis.call('HDEL', KEYS[5], id)
  redis.call('HINCRBY', KEYS[2], 'applied', 1)
end
return {'applied', count}
