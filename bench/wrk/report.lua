-- report.lua: wrk done() hook shared by the bench scripts.
--
-- Prints one parseable line after wrk's own report:
--   RESULT rps=... requests=... duration_s=... p50_ms=... p90_ms=... p99_ms=... p999_ms=...
--          max_ms=... mean_ms=... non2xx=... err_connect=... err_read=... err_write=... err_timeout=...
-- (one line; wrapped here). Latencies come from wrk's histogram (microseconds
-- internally), so like wrk itself they suffer from coordinated omission: they
-- are the latency of the requests that were made, under closed-loop load.
-- non2xx is wrk's errors.status (responses with status > 399 — wrk counts
-- 3xx as fine); any non-zero value makes the run suspect.
--
-- Use directly for GET:  wrk -s bench/wrk/report.lua URL
-- post_alert.lua loads this file for its own done().

function done(summary, latency, requests)
   local secs = summary.duration / 1e6
   local e = summary.errors
   local function ms(us) return us / 1000.0 end
   io.write(string.format(
      "RESULT rps=%.1f requests=%d duration_s=%.3f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f mean_ms=%.3f non2xx=%d err_connect=%d err_read=%d err_write=%d err_timeout=%d\n",
      summary.requests / secs, summary.requests, secs,
      ms(latency:percentile(50)), ms(latency:percentile(90)),
      ms(latency:percentile(99)), ms(latency:percentile(99.9)),
      ms(latency.max), ms(latency.mean),
      e.status, e.connect, e.read, e.write, e.timeout))
end
