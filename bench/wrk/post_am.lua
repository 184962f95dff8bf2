-- post_am.lua: wrk script posting alerts to Prometheus Alertmanager, the peer of post_alert.lua.
--
--   wrk -t2 -c64 -d10s -s bench/wrk/post_am.lua http://127.0.0.1:PORT [-- PREFIX]
--
-- POSTs /api/v2/alerts (Content-Type: application/json) with a list of one alert, about the
-- size of post_alert.lua's (the same title and message as its summary and description, a few
-- labels, a generatorURL). Alertmanager answers 200.
--
-- Every request is a NEW alert: its "request" label is unique ("<PREFIX>-<thread>-<n>", PREFIX
-- default "bench", so a warm-up run with another prefix adds different alerts). That is the work
-- post_alert.lua asks of alertd, where each POST creates an alert that stays pending; a few
-- fixed alerts sent over and over would measure Alertmanager's cheaper path instead (the alert
-- exists: a merge of its timestamps, no new entry in its store or its aggregation group).
-- One alert a list, because an alertd POST carries one alert.
-- The body is built per request (a concatenation and wrk.format: a few microseconds of wrk's
-- CPU that post_alert.lua, which pre-formats its requests, does not spend).
-- done() comes from report.lua (a single RESULT line).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local head = '[{"labels":{"alertname":"DeployPending","service":"checkout","severity":"warning","request":"'
local tail = '"},"annotations":{"summary":"Deploy build 4711 to production?",'
   .. '"description":"All 1342 checks passed on commit 9f3c2e1. The rollout takes about 4 minutes and can be rolled back."},'
   .. '"generatorURL":"http://ci.example/builds/4711"}]'
local headers = { ["Content-Type"] = "application/json" }

-- setup() runs in wrk's main Lua state once per thread: give each thread a number, so that
-- the threads' labels differ.
local threads = 0
function setup(thread)
   threads = threads + 1
   thread:set("thread_number", threads)
end

local prefix
local n = 0

function init(args)
   prefix = (args[1] or "bench") .. "-" .. tostring(thread_number) .. "-"
end

function request()
   n = n + 1
   return wrk.format("POST", "/api/v2/alerts", headers, head .. prefix .. n .. tail)
end
