-- wrk script: Mastodon-shaped Web Push POSTs to the relay (ARCHITECTURE.md §9).
--
-- What Mastodon (webpush gem, legacy "aesgcm" subscriptions) sends: the
-- ciphertext as an octet stream, Content-Encoding aesgcm, the salt in
-- Encryption, the sender's ECDH key (dh=) and the VAPID key (p256ecdsa=) in
-- Crypto-Key, a VAPID JWT in Authorization, TTL 172800, Urgency normal.
-- Every request goes to a fresh random 64-hex device token.
--
-- Environment: BODY_BYTES (ciphertext size, default 2048). SERVICE=fcm sends
-- to webpush-fcm-relay's URL (/relay-to/fcm/<token>) instead, each request
-- to a fresh FCM registration token of a real one's shape and length (163
-- characters: an instance id, ":APA91b", then letters, digits, - and _).
-- With VAPID_HASH,
-- VAPID_KEY and VAPID_JWT_FILE (bench.py's restricted cell) the URL
-- is a restricted endpoint (?vapid=) and Crypto-Key/Authorization carry that
-- real key and the file's JWTs, one per request in turn (Mastodon signs each
-- push anew); without, a random key and an unsigned JWT, as the relay
-- ignores them on an unrestricted endpoint.
--
-- Everything but the token is built once: the per-request work in wrk (the
-- same 2 cores as the relay) is 64 hex digits and one concatenation.

local body_bytes = tonumber(os.getenv("BODY_BYTES") or "2048")

local function random_bytes(count)
  local bytes = {}
  for i = 1, count do bytes[i] = string.char(math.random(0, 255)) end
  return table.concat(bytes)
end

local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
-- base64url without padding (RFC 4648 §5), as the webpush gem sends it.
local function base64url(data)
  local out = {}
  for i = 1, #data, 3 do
    local a, b, c = data:byte(i, i + 2)
    local n = a * 65536 + (b or 0) * 256 + (c or 0)
    local chars = (b == nil) and 2 or ((c == nil) and 3 or 4)
    for j = 1, chars do
      local shift = 18 - 6 * (j - 1)
      local index = math.floor(n / 2 ^ shift) % 64
      out[#out + 1] = b64chars:sub(index + 1, index + 1)
    end
  end
  return table.concat(out)
end

-- random_token, seed_per_thread and done (the WRK-RESULT line) live beside.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk-common.lua")

local head_prefix, head_suffix, head_jwt, head_rest, head_whole
local fcm = os.getenv("SERVICE") == "fcm"

local token_chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
local function random_token_text(count)
  local out = {}
  for i = 1, count do
    local index = math.random(1, #token_chars)
    out[i] = token_chars:sub(index, index)
  end
  return table.concat(out)
end
local jwts, next_jwt = {}, 0

function init(args)
  seed_per_thread()
  local body = random_bytes(body_bytes)
  local salt = base64url(random_bytes(16))
  -- An uncompressed P-256 point: 0x04 || X || Y.
  local dh = base64url("\4" .. random_bytes(64))
  local vapid_key = os.getenv("VAPID_KEY") or base64url("\4" .. random_bytes(64))
  local jwt = base64url('{"typ":"JWT","alg":"ES256"}') .. "." ..
    base64url('{"aud":"https://relay.example","exp":1893456000,"sub":"mailto:admin@mastodon.example"}') .. "." ..
    base64url(random_bytes(64))
  if os.getenv("VAPID_JWT_FILE") then
    for line in io.lines(os.getenv("VAPID_JWT_FILE")) do jwts[#jwts + 1] = line end
    -- Each wrk thread starts at its own place in the list.
    next_jwt = math.random(1, #jwts)
  end
  local query = os.getenv("VAPID_HASH") and ("?vapid=" .. os.getenv("VAPID_HASH")) or ""
  head_prefix = "POST /relay-to/production/"
  local token_rest = ""
  if fcm then
    -- 22 + 7 + 64 random hex (per request) + 70: a 163-character token; its
    -- first and last parts fixed per thread keep wrk's per-request work as
    -- small as the APNs URL's.
    head_prefix = "POST /relay-to/fcm/" .. random_token_text(22) .. ":APA91b"
    token_rest = random_token_text(70)
  end
  head_suffix = token_rest .. query .. " HTTP/1.1\r\n" ..
    "Host: " .. wrk.host .. ":" .. wrk.port .. "\r\n" ..
    "User-Agent: Mastodon/4.3.0 (http.rb/5.2.0; +https://mastodon.example/)\r\n" ..
    "Content-Type: application/octet-stream\r\n" ..
    "Content-Encoding: aesgcm\r\n" ..
    "Encryption: salt=" .. salt .. "\r\n" ..
    "Crypto-Key: dh=" .. dh .. ";p256ecdsa=" .. vapid_key .. "\r\n" ..
    "Authorization: WebPush "
  head_jwt = jwt
  head_rest = "\r\n" ..
    "TTL: 172800\r\n" ..
    "Urgency: normal\r\n" ..
    "Content-Length: " .. #body .. "\r\n" ..
    "\r\n" .. body
  head_whole = head_suffix .. head_jwt .. head_rest
end

function request()
  if #jwts > 0 then
    next_jwt = next_jwt % #jwts + 1
    return head_prefix .. random_token() .. head_suffix .. jwts[next_jwt] .. head_rest
  end
  return head_prefix .. random_token() .. head_whole
end
