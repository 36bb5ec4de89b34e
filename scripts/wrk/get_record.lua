-- GET one record (the URL given to wrk) and report.
dofile("scripts/wrk/report.lua")
