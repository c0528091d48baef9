-- wrk script: gorush-shaped POST /api/push requests to the relay's provider
-- API (bench.py's provider cell).
--
-- Each request is {"notifications":[{"tokens":[TOKENS_PER_REQUEST tokens],
-- "platform":1,"title":…,"message":…,"mutable_content":true,"data":{"p":…}}]}
-- as a backend that switched from gorush sends it; `data.p` is text of
-- PAYLOAD_TEXT_BYTES (default 2730, about the z85 text of the Web Push cell's
-- 2048-byte body) so the APNs payload matches the Web Push cell's in size.
--
-- Environment: TOKENS_PER_REQUEST (default 100), PAYLOAD_TEXT_BYTES,
-- API_KEY (sent as Authorization: Bearer when set).
--
-- wrk shares the cores with the relay: 64 bodies, each with its own random
-- tokens, are built once per thread and sent in turn (APNs and the emulator
-- take a token twice; the relay does not remember tokens), so the per-request
-- work in wrk is one table lookup.

local tokens_per_request = tonumber(os.getenv("TOKENS_PER_REQUEST") or "100")
local payload_text_bytes = tonumber(os.getenv("PAYLOAD_TEXT_BYTES") or "2730")
local api_key = os.getenv("API_KEY")

-- random_token, seed_per_thread and done (the WRK-RESULT line) live beside.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk-common.lua")

local random = math.random

-- z85's alphabet minus the characters JSON would escape (" and \ are not in
-- it anyway): the text needs no escaping, as a z85 payload needs none.
local alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
local function random_text(count)
  local out = {}
  for i = 1, count do
    local index = random(1, #alphabet)
    out[i] = alphabet:sub(index, index)
  end
  return table.concat(out)
end

local requests_built, next_request = {}, 0

function init(args)
  seed_per_thread()
  local text = random_text(payload_text_bytes)
  for n = 1, 64 do
    local tokens = {}
    for i = 1, tokens_per_request do tokens[i] = '"' .. random_token() .. '"' end
    local body = '{"notifications":[{"tokens":[' .. table.concat(tokens, ",") .. '],"platform":1,' ..
      '"title":"Mastodon","message":"You have a new notification","mutable_content":true,' ..
      '"data":{"p":"' .. text .. '"}}]}'
    local head = "POST /api/push HTTP/1.1\r\n" ..
      "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
      "Content-Type: application/json\r\n" ..
      (api_key and ("Authorization: Bearer " .. api_key .. "\r\n") or "") ..
      "Content-Length: " .. #body .. "\r\n\r\n"
    requests_built[n] = head .. body
  end
  next_request = math.random(1, #requests_built)
end

function request()
  next_request = next_request % #requests_built + 1
  return requests_built[next_request]
end
