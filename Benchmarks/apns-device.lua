-- wrk script: Apple's request over HTTP/1.1 to the relay's API port,
-- `POST /3/device/<token>` (api_h2.py's HTTP/1.1 cell), each request to a
-- fresh random 64-hex device token.
--
-- The body is PAYLOAD_FILE's bytes (the APNs payload h2load sends in the
-- HTTP/2 cells, bench.py's write_apns_payload), with the headers h2load sends
-- there: apns-push-type, apns-topic (TOPIC), apns-priority, apns-expiration
-- (EXPIRATION), content-type, and API_KEY as the bearer. Everything but the
-- token is built once in `init`, so wrk spends little of the shared CPU per
-- request.

local payload_file = assert(os.getenv("PAYLOAD_FILE"), "PAYLOAD_FILE")
local topic = assert(os.getenv("TOPIC"), "TOPIC")
local expiration = assert(os.getenv("EXPIRATION"), "EXPIRATION")
local api_key = assert(os.getenv("API_KEY"), "API_KEY")

-- random_token, seed_per_thread and done (the WRK-RESULT line) live beside.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk-common.lua")

local head, tail

function init(args)
  seed_per_thread()
  local file = assert(io.open(payload_file, "rb"))
  local body = file:read("*a")
  file:close()
  head = "POST /3/device/"
  tail = " HTTP/1.1\r\n" ..
    "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
    "Authorization: Bearer " .. api_key .. "\r\n" ..
    "apns-push-type: alert\r\n" ..
    "apns-topic: " .. topic .. "\r\n" ..
    "apns-priority: 10\r\n" ..
    "apns-expiration: " .. expiration .. "\r\n" ..
    "Content-Type: application/json\r\n" ..
    "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

function request()
  return head .. random_token() .. tail
end
