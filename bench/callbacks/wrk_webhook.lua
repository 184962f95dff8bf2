-- wrk_webhook.lua: wrk script posting webhook deliveries shaped like alertd's to the receiver,
-- to measure the receiver's own capacity (bench/callbacks/throughput.py runs it).
--
--   wrk -t2 -c16 -d5s -s bench/callbacks/wrk_webhook.lua http://127.0.0.1:PORT/hook
--
-- Body: an alert.answered event of about 800 bytes (a realistic alert with buttons,
-- metadata and result), with Content-Type, webhook-id, webhook-timestamp and a
-- webhook-signature header of the real length (the receiver checks it only with
-- --secret, which the baseline does not pass). 64 different alert ids / webhook ids
-- are rotated. done() prints one RESULT line (bench/wrk/report.lua).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "../wrk/report.lua")

local reqs = {}
local i = 0

function init(args)
   local ts = tostring(os.time())
   for k = 0, 63 do
      local id = string.format("01JDB00000000000000BENCH%02d", k)
      local body = '{"type":"alert.answered","timestamp":"2026-11-21T21:05:58.131Z","data":{"alert":'
         .. '{"id":"' .. id .. '","client":"bench-' .. k .. '","state":"answered","position":null,'
         .. '"title":"Deploy build 4711 to production?",'
         .. '"message":"All 1342 checks passed on commit 9f3c2e1. The rollout takes about 4 minutes and can be rolled back.",'
         .. '"style":"alert","buttons":[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}],'
         .. '"priority":0,"expires_in":86400,"dismiss_after":null,"callback_url":"http://127.0.0.1:19101/hook",'
         .. '"metadata":{"service":"checkout","build":4711,"requested_by":"ci"},'
         .. '"created_at":"2026-11-21T21:05:58.131Z","displayed_at":"2026-11-21T21:05:58.131Z",'
         .. '"decided_at":"2026-11-21T21:05:58.531Z","expires_at":"2026-11-22T21:05:58.131Z",'
         .. '"result":{"outcome":"answered","button":"Deploy","button_index":0,"cancelled":false,"decided_by":null}}}}'
      local headers = {
         ["Content-Type"] = "application/json",
         ["webhook-id"] = string.format("msg_01JDB00000000000000EVENT%02d", k),
         ["webhook-timestamp"] = ts,
         ["webhook-signature"] = "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
      }
      reqs[k + 1] = wrk.format("POST", nil, headers, body)
   end
end

function request()
   i = i % #reqs + 1
   return reqs[i]
end
