-- post_alert.lua: wrk script posting a realistic alert.
--
--   wrk -t2 -c64 -d10s -s bench/wrk/post_alert.lua http://127.0.0.1:PORT [-- CLIENTS [PREFIX]]
--
-- POSTs to /v1/clients/<client>/alerts with Content-Type: application/json.
-- CLIENTS (default 1) spreads the posts round-robin over that many clients:
-- "<PREFIX>" (default "bench"), "<PREFIX>-1", ... "<PREFIX>-(CLIENTS-1)".
-- With 1 client every post goes to /v1/clients/bench/alerts. Use more than
-- one when a run would post more alerts than limits.max_pending_per_client
-- (the alerts have buttons, so they stay pending).
-- Requests are pre-formatted in init(); request() only picks the next one.
-- done() comes from report.lua (a single RESULT line).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local body = '{"title":"Deploy build 4711 to production?",'
   .. '"message":"All 1342 checks passed on commit 9f3c2e1. The rollout takes about 4 minutes and can be rolled back.",'
   .. '"buttons":[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}],'
   .. '"priority":0,'
   .. '"metadata":{"service":"checkout","build":4711,"requested_by":"ci"}}'

local reqs = {}
local n = 0
local i = 0

function init(args)
   local clients = tonumber(args[1] or "1") or 1
   local prefix = args[2] or "bench"
   local headers = { ["Content-Type"] = "application/json" }
   for k = 0, clients - 1 do
      local client = prefix
      if k > 0 then client = prefix .. "-" .. k end
      reqs[k + 1] = wrk.format("POST", "/v1/clients/" .. client .. "/alerts", headers, body)
   end
   n = clients
end

function request()
   i = i % n + 1
   return reqs[i]
end
