-- get_current.lua: wrk script reading one client's displayed alert.
--
--   wrk -t1 -c32 -d10s -s bench/wrk/get_current.lua http://127.0.0.1:PORT [-- CLIENT]
--
-- GETs /v1/clients/<CLIENT>/alerts/current (default "shown"): post an alert to it first,
-- so that every answer is a 200 with the alert. done() comes from report.lua.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local req

function init(args)
   req = wrk.format("GET", "/v1/clients/" .. (args[1] or "shown") .. "/alerts/current")
end

function request()
   return req
end
