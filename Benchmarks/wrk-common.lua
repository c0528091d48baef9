-- What the wrk scripts of scripts/bench share (loaded with dofile by
-- mastodon-aesgcm.lua and provider-push.lua): random device tokens and the
-- machine-readable result line bench.py reads.

local random, format = math.random, string.format

-- 64 hex digits from eight 32-bit draws, one string.format: wrk shares the
-- cores with the relay, so its per-request work is kept small.
function random_token()
  return format("%08x%08x%08x%08x%08x%08x%08x%08x",
    random(0, 0xffffffff), random(0, 0xffffffff), random(0, 0xffffffff), random(0, 0xffffffff),
    random(0, 0xffffffff), random(0, 0xffffffff), random(0, 0xffffffff), random(0, 0xffffffff))
end

-- Distinct random streams per wrk thread (each has its own Lua state).
function seed_per_thread()
  math.randomseed(os.time() * 1000 + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000003)
end

-- One machine-readable line for scripts/bench (latency in microseconds).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK-RESULT requests=%d duration_us=%d connect=%d read=%d write=%d timeout=%d non2xx=%d " ..
    "p50_us=%d p99_us=%d max_us=%d\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), latency.max))
end
