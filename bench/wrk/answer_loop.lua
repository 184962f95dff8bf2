-- answer_loop.lua: wrk script that posts an alert and answers it, over and over.
--
--   wrk -tN -cN -d600s -s bench/wrk/answer_loop.lua http://127.0.0.1:PORT [-- PREFIX]
--
-- Run it with as many threads as connections (-tN -cN): each thread then has
-- one connection and one client of its own ("<PREFIX>-<thread>", PREFIX
-- default "soak"), so the alert it just posted is the displayed one and its
-- choice is answered 200. Each thread alternates: POST an alert (the same
-- realistic 321-byte body as post_alert.lua), then POST its choice. Every
-- alert ends answered: terminal alerts pile up as fast as alertd takes them,
-- which is what alerts.retention_max bounds (bench/soak.sh).
-- done() prints "ANSWERED <n>" and "REFUSED <n>" (answers other than 201/200).

local threads = {}
local counter = 0

function setup(thread)
   thread:set("index", counter)
   counter = counter + 1
   table.insert(threads, thread)
end

local body = '{"title":"Deploy build 4711 to production?",'
   .. '"message":"All 1342 checks passed on commit 9f3c2e1. The rollout takes about 4 minutes and can be rolled back.",'
   .. '"buttons":[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}],'
   .. '"priority":0,'
   .. '"metadata":{"service":"checkout","build":4711,"requested_by":"ci"}}'
local headers = { ["Content-Type"] = "application/json" }
local choice = '{"button_index":0}'
local base
local post
local pending = nil
answered = 0
refused = 0

function init(args)
   local prefix = args[1] or "soak"
   base = "/v1/clients/" .. prefix .. "-" .. index .. "/alerts"
   post = wrk.format("POST", base, headers, body)
end

function request()
   if pending then
      local id = pending
      pending = nil
      return wrk.format("POST", base .. "/" .. id .. "/choice", headers, choice)
   end
   return post
end

function response(status, hdrs, text)
   if status == 201 then
      pending = text:match('"id":"([^"]+)"')
   elseif status == 200 then
      answered = answered + 1
   else
      refused = refused + 1
   end
end

function done(summary, latency, requests)
   local a, r = 0, 0
   for _, thread in ipairs(threads) do
      a = a + (thread:get("answered") or 0)
      r = r + (thread:get("refused") or 0)
   end
   io.write(string.format("ANSWERED %d\nREFUSED %d\n", a, r))
end
