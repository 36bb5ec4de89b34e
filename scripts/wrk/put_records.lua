-- PUTs of one series' 1,000 years in turn: every request a write (the journal's bench, scripts/benchmark/journal.py).
dofile("scripts/wrk/report.lua")

local year = 0

function request()
  year = (year + 1) % 1000
  return wrk.format("PUT", "/api/v1/growth/BRZ/NGDP_R/" .. year,
                    {["Content-Type"] = "application/json"}, '{"value": ' .. year .. '.5}')
end
