-- wrk script of `scripts/long-run --api` (RELIABILITY.md §5): gorush
-- `/api/push` requests of 100 tokens each, 98 ordinary and 2 of the APNs
-- emulator's 410 Unregistered fault tokens (Sources/APNsEmulator/
-- FaultInjection.swift: `fa11fa11` then code `01`), and a check of every
-- answer: 200, `counts` 100, and in `logs` exactly that request's two fault
-- tokens, each with reason Unregistered.
--
-- The fault tokens are distinct across the whole run (wrk thread id and a
-- serial number in their free digits), so the relay's feedback list and hook
-- see one new dead token each, and an answer can be matched to what was
-- sent: a wrk thread owns its connections, so every token in an answer it
-- reads was sent by that thread (`pending`). The 98 ordinary tokens come from
-- 64 bodies built once per thread, as in Benchmarks/provider-push.lua (wrk
-- shares the cores with the relay; APNs and the emulator take a token twice).
--
-- Environment: API_KEY (Bearer), LONG_RUN_QUOTA and LONG_RUN_DONE_DIR
-- (long-run-quota.lua), PAYLOAD_TEXT_BYTES (default 2730, provider-push.lua's
-- size).

-- random_token and seed_per_thread (its `done` is replaced below), and
-- stop_at_quota.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "../Benchmarks/wrk-common.lua")
dofile(here .. "long-run-quota.lua")

local api_key = os.getenv("API_KEY")
local payload_text_bytes = tonumber(os.getenv("PAYLOAD_TEXT_BYTES") or "2730")
local format = string.format
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

-- Each body is three pieces around the two fault tokens (positions 50 and
-- 100); every token is 64 digits, so Content-Length is the same for all.
local pieces = {}
local serial = 0
local pending = {}

function init(args)
  seed_per_thread()
  -- The text's content does not matter to the relay, only its size.
  local text = string.rep("z", payload_text_bytes)
  local fault_placeholder = string.rep("0", 64)
  for n = 1, 64 do
    local tokens = {}
    for i = 1, 100 do tokens[i] = '"' .. random_token() .. '"' end
    local before = '{"notifications":[{"tokens":[' .. table.concat(tokens, ",", 1, 49) .. ',"'
    local middle = '",' .. table.concat(tokens, ",", 51, 99) .. ',"'
    local after = '"],"platform":1,"title":"Mastodon","message":"You have a new notification",' ..
      '"mutable_content":true,"data":{"p":"' .. text .. '"}}]}'
    local length = #before + #middle + #after + 2 * #fault_placeholder
    local head = "POST /api/push HTTP/1.1\r\n" ..
      "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
      "Content-Type: application/json\r\n" ..
      (api_key and ("Authorization: Bearer " .. api_key .. "\r\n") or "") ..
      "Content-Length: " .. length .. "\r\n\r\n"
    pieces[n] = {head .. before, middle, after}
  end
  answers, good, bad, non200, faults_sent, faults_answered = 0, 0, 0, 0, 0, 0
end

local function fault_token()
  serial = serial + 1
  -- `fa11fa11` + code `01` (410 Unregistered) + thread id + serial: 64 digits.
  local token = format("fa11fa1101%04x%050x", id, serial)
  pending[token] = true
  faults_sent = faults_sent + 1
  return token
end

function request()
  local p = pieces[serial % #pieces + 1]
  return p[1] .. fault_token() .. p[2] .. fault_token() .. p[3]
end

function response(status, headers, body)
  answers = answers + 1
  if status ~= 200 then
    non200 = non200 + 1
  else
    local matched, logs, unregistered = 0, 0, 0
    for token in body:gmatch('"token":"(%x+)"') do
      logs = logs + 1
      if pending[token] then
        pending[token] = nil
        matched = matched + 1
      end
    end
    for _ in body:gmatch('"reason":"Unregistered"') do unregistered = unregistered + 1 end
    faults_answered = faults_answered + matched
    if body:match('^{"counts":(%d+),') == "100" and logs == 2 and matched == 2 and unregistered == 2 then
      good = good + 1
    else
      bad = bad + 1
      if bad <= 3 then io.stderr:write("long-run-api: unexpected answer: " .. body:sub(1, 300) .. "\n") end
    end
  end
  stop_at_quota(answers)
end

function done(summary, latency, requests)
  local totals = {answers = 0, good = 0, bad = 0, non200 = 0, faults_sent = 0, faults_answered = 0}
  for _, thread in ipairs(threads) do
    for name, value in pairs(totals) do totals[name] = value + thread:get(name) end
  end
  io.write(format("wrk-api-ledger answers=%d good=%d bad=%d non200=%d faults_sent=%d faults_answered=%d\n",
    totals.answers, totals.good, totals.bad, totals.non200, totals.faults_sent, totals.faults_answered))
  io.write(format("wrk-latency p50=%.2fms p99=%.2fms max=%.2fms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
