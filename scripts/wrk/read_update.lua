-- The k6 read/update mix as wrk requests: GET /ping, GET a record, PUT it, in turn.
dofile("scripts/wrk/report.lua")

local put_body = '{"value": 183.26}'
local step = 0

function request()
  step = step % 3 + 1
  if step == 1 then
    return wrk.format("GET", "/ping")
  elseif step == 2 then
    return wrk.format("GET", "/api/v1/growth/BRZ/NGDP_R/2002")
  end
  return wrk.format("PUT", "/api/v1/growth/BRZ/NGDP_R/2002",
                    {["Content-Type"] = "application/json"}, put_body)
end
