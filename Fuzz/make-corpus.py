#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/corpus/<target>/ (committed; run again
only to change them). Each seed is laid out as its fuzz target reads input
(see the comment at the top of the target's file in Fuzz/<target>/). Deterministic: random
bytes come from a fixed seed, so the files only change when this script does.
"""
import base64
import os
import random
import struct
import xmlrpc.client as xmlrpc_client

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
rng = random.Random(8030)


def rand(n):
    return bytes(rng.randrange(256) for _ in range(n))


def b64url(data, pad=False):
    text = base64.urlsafe_b64encode(data).decode()
    return text if pad else text.rstrip("=")


def write(target, name, data):
    directory = os.path.join(ROOT, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


TOKEN = "3f0a9c61e2b8d4475a1c0e9b2f6d8a7c5e4b3a29180f7e6d5c4b3a2918076f5e"
DH = b"\x04" + rand(64)
SALT = rand(16)
VAPID_KEY = b"\x04" + rand(64)
JWT = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9." + b64url(b'{"aud":"https://relay.example","exp":1700000000,"sub":"mailto:admin@mastodon.example"}') + "." + b64url(rand(64))
AESGCM_BODY = rand(2) + rand(300)  # padding length + ciphertext + tag
AES128GCM_BODY = SALT + struct.pack(">I", 4096) + bytes([65]) + DH + rand(200)
UA = "Mastodon/4.2.10 (http.rb/5.1.1; +https://mastodon.example/)"


def request(head_lines, body=b"", line_end="\r\n"):
    head = line_end.join(head_lines) + line_end + line_end
    return head.encode() + body


def aesgcm_request(path=f"/relay-to/production/{TOKEN}", extra_headers=()):
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: relay.example",
        f"User-Agent: {UA}",
        "Content-Type: application/octet-stream",
        "Content-Encoding: aesgcm",
        f"Crypto-Key: dh={b64url(DH)};p256ecdsa={b64url(VAPID_KEY)}",
        f"Encryption: salt={b64url(SALT)}",
        "Ttl: 172800",
        "Urgency: normal",
        f"Authorization: WebPush {JWT}",
        *extra_headers,
        f"Content-Length: {len(AESGCM_BODY)}",
    ]
    return request(lines, AESGCM_BODY)


def aes128gcm_request(path=f"/relay-to/development/{TOKEN}/mastodon.example/42"):
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: relay.example",
        f"User-Agent: {UA}",
        "Content-Type: application/octet-stream",
        "Content-Encoding: aes128gcm",
        "TTL: 172800",
        "Urgency: high",
        f"Authorization: vapid t={JWT},k={b64url(VAPID_KEY)}",
        f"Content-Length: {len(AES128GCM_BODY)}",
        "Connection: close",
    ]
    return request(lines, AES128GCM_BODY)


def chunked(body, sizes):
    out = b""
    offset = 0
    for size in sizes:
        part = body[offset:offset + size]
        offset += size
        out += b"%x;name=value\r\n" % len(part) + part + b"\r\n"
    rest = body[offset:]
    if rest:
        out += b"%X\r\n" % len(rest) + rest + b"\r\n"
    return out + b"0\r\nX-Trailer: yes\r\n\r\n"


# ---- http1-parser: [flags][3 limit bytes][k][k × uint16 split][stream]

def http1(name, stream, flags=0, limits=(0, 0, 0), splits=()):
    prefix = bytes([flags, *limits, len(splits)]) + b"".join(struct.pack("<H", s) for s in splits)
    write("http1-parser", name, prefix + stream)


health = request(["GET /relay-to/_health HTTP/1.1", "Host: relay.example", "User-Agent: monitor/1.0"])
http1("aesgcm", aesgcm_request())
http1("aes128gcm-split", aes128gcm_request(), splits=(1, 17, 40, 200, 301, 302, 400))
chunked_head = [
    f"POST /relay-to/production/{TOKEN} HTTP/1.1",
    "Host: relay.example",
    "Content-Encoding: aes128gcm",
    "TTL: 60",
    "Transfer-Encoding: chunked",
]
http1("chunked", request(chunked_head) + chunked(AES128GCM_BODY, [100, 50]), splits=(50, 180, 181, 260))
http1("pipelined-pair", aesgcm_request() + health, splits=(500,))
http1("pipelined-health-then-post", health + aes128gcm_request())
curl = request([
    f"POST /relay-to/production/{TOKEN} HTTP/1.1",
    "Host: 127.0.0.1:8080",
    "User-Agent: curl/7.88.1",
    "Accept: */*",
    "Content-Encoding: aes128gcm",
    "TTL: 0",
    f"Content-Length: {len(AES128GCM_BODY)}",
    "Expect: 100-continue",
], AES128GCM_BODY)
http1("expect-continue", curl, splits=(230,))
http1("http10-keepalive", request([
    "POST /relay-to/production/%s HTTP/1.0" % TOKEN,
    "Connection: keep-alive",
    "Content-Length: 5",
]) + b"hello" + request(["GET /relay-to/_health HTTP/1.0"]))
http1("bare-lf", b"\n" + request(["GET /relay-to/_health?x=1 HTTP/1.1", "host: a"], line_end="\n"))
http1("small-limits", aesgcm_request(), flags=1, limits=(40, 20, 12))
http1("byte-at-a-time", request(chunked_head) + chunked(b"0123456789abcdef", [3]), flags=2)
http1("both-framings", request(["POST / HTTP/1.1", "Host: a", "Content-Length: 3", "Transfer-Encoding: chunked"]) + b"abc")
http1("obs-fold", request(["GET / HTTP/1.1", "Host: a", "X-Long: a", " b"]))
http1("chunked-twice", request(["POST / HTTP/1.1", "Host: a", "Transfer-Encoding: gzip, chunked"]) + b"0\r\n\r\n")
http1("http2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
http1("push-aesgcm", aesgcm_request(path=f"/push/{TOKEN}/42?sandbox=true"))
http1("push-app-aes128gcm", aes128gcm_request(path=f"/push/org.joinmastodon.ios/{TOKEN}/acct%2F42"))

# ---- web-push: [mode][count][(selector, uint16 length, value)…][maxTTL selector]
#      [extra flag (, uint16 length, extra)][environment | 2 for metatext][int64 now][body]

NAMES = ["content-encoding", "ttl", "urgency", "topic", "crypto-key", "encryption", "content-length", "host",
         "content-type", "authorization"]


def webpush(name, fields, body, extra=None, environment=0, now=1_700_000_000, max_ttl=b"\x00", mode=0):
    data = bytes([mode, len(fields)])
    for field, value in fields:
        selector = NAMES.index(field.lower()) | (0x80 if field != field.lower() else 0)
        raw = value.encode()
        data += bytes([selector]) + struct.pack("<H", len(raw)) + raw
    data += max_ttl
    if extra is None:
        data += b"\x00"
    else:
        raw = extra.encode()
        data += b"\x01" + struct.pack("<H", len(raw)) + raw
    data += bytes([environment]) + struct.pack("<q", now)
    write("web-push", name, data + body)


aesgcm_fields = [
    ("content-encoding", "aesgcm"),
    ("crypto-key", f"dh={b64url(DH)};p256ecdsa={b64url(VAPID_KEY)}"),
    ("encryption", f"salt={b64url(SALT)}"),
    ("ttl", "172800"),
    ("urgency", "normal"),
]
webpush("aesgcm", aesgcm_fields, AESGCM_BODY)
webpush("aesgcm-extra-topic", aesgcm_fields + [("topic", "mention-42")], AESGCM_BODY,
        extra="mastodon.example/notifications?id=42&q=\"x\"\\", environment=1)
webpush("aesgcm-quoted-padded", [
    ("CONTENT-ENCODING", "AESGCM"),
    ("crypto-key", f'keyid=p256dh; dh="{b64url(DH, pad=True)}", p256ecdsa={b64url(VAPID_KEY)}'),
    ("encryption", f"keyid = p256dh ; salt = {b64url(SALT, pad=True)}"),
    ("ttl", "0"),
    ("urgency", "very-low"),
], AESGCM_BODY)
webpush("aes128gcm", [("content-encoding", "aes128gcm"), ("ttl", "172800"), ("urgency", "high")],
        AES128GCM_BODY, extra="a/b%2Fc")
webpush("aes128gcm-huge-ttl", [("content-encoding", "aes128gcm"), ("TTL", "99999999999999999999999")],
        AES128GCM_BODY, max_ttl=b"\x01" + struct.pack("<q", 86400), now=2**63 - 10)
webpush("aes128gcm-near-limit", [("content-encoding", "aes128gcm"), ("ttl", "60")],
        AES128GCM_BODY + rand(3000 - len(AES128GCM_BODY)), extra="x" * 100)
webpush("missing-ttl", [("content-encoding", "aesgcm"), ("crypto-key", "dh=AAAA"), ("encryption", "salt=AAAA")],
        b"short")
webpush("no-encoding", [("ttl", "1")], b"")
# The metatext dialect (environment bit 1): the extra text is the id.
webpush("metatext-aesgcm", aesgcm_fields, AESGCM_BODY, extra="42", environment=2)
webpush("metatext-aesgcm-quoted-padded", [
    ("content-encoding", "aesgcm"),
    ("crypto-key", f'dh="{b64url(DH, pad=True)}";p256ecdsa={b64url(VAPID_KEY)}'),
    ("encryption", f'salt="{b64url(SALT)}";rs=4096'),
    ("ttl", "60"),
], AESGCM_BODY, extra="acct/\"42\"", environment=3)
webpush("metatext-aes128gcm-near-limit", [("content-encoding", "aes128gcm"), ("ttl", "60")],
        AES128GCM_BODY + (bytes(range(256)) * 12)[:2950 - len(AES128GCM_BODY)], extra="7", environment=2)
write("web-push", "raw-crypto-key", b"\x02" + f'keyid="a;b,c"; dh={b64url(DH)}, p256ecdsa="\\"q\\""'.encode())
write("web-push", "raw-encryption", b"\x02" + b"salt=" + b64url(SALT).encode() + b";rs=4096")
write("web-push", "roundtrip", b"\x03\x04" + rand(200))

# ---- base64url-codec: [mode][text or bytes]
for name, text in [
    ("dh", b64url(DH)), ("salt-padded", b64url(SALT, pad=True)),
    ("standard-alphabet", base64.b64encode(DH).decode()), ("mixed-alphabets", "ab-_+/"),
    ("unused-bits", "AB"), ("bad-padding", "QQ="), ("inner-padding", "QQ==QQ=="), ("space", "QU JD"),
    ("4n+1", "QUJDR"), ("empty", ""),
]:
    write("base64url-codec", "decode-" + name, b"\x00" + text.encode())
write("base64url-codec", "roundtrip-bytes", b"\x01" + rand(40))
write("base64url-codec", "roundtrip-empty", b"\x01")

# ---- z85-codec: the vectors of WIRE.md §2.1, decoded and encoded
Z85_VECTORS = [
    ("", ""), ("00", "00"), ("ff", "30"), ("ffff", "960"), ("ffffff", "rr90"), ("00000000", "00000"),
    ("ffffffff", "%nSc0"), ("864FD26FB559F75B", "HelloWorld"), ("864FD26FB559F75B01", "HelloWorld01"),
    ("864FD26FB559F75Bffffff", "HelloWorldrr90"),
]
for index, (hex_bytes, text) in enumerate(Z85_VECTORS):
    write("z85-codec", f"decode-vector-{index}", b"\x00" + text.encode())
    write("z85-codec", f"encode-vector-{index}", b"\x01" + bytes.fromhex(hex_bytes))
for name, text in [("overflow", "%nSc1"), ("overflow-short", "31"), ("dangling", "HelloWorld0"), ("bad-char", "Hello\"orld")]:
    write("z85-codec", "decode-" + name, b"\x00" + text.encode())

# ---- route: [method selector][target]  (0 POST, 1 GET, 2 HEAD, 3 PUT, 7 raw method)
for name, selector, target in [
    ("post", 0, f"/relay-to/production/{TOKEN}"),
    ("post-extra", 0, f"/relay-to/development/{TOKEN}/mastodon.example/%E2%9C%93%2F%zz"),
    ("post-upper-token", 0, f"/relay-to/production/{TOKEN.upper()}?query=1"),
    ("post-long-token", 0, f"/relay-to/production/{TOKEN * 3}"),
    ("post-absolute", 0, f"HTTP://relay.example:8080/relay-to/production/{TOKEN}/x#frag"),
    ("post-odd-token", 0, f"/relay-to/production/{TOKEN}a"),
    ("post-bad-env", 0, f"/relay-to/staging/{TOKEN}"),
    ("health", 1, "/relay-to/_health"),
    ("health-head", 2, "/relay-to/_health?probe"),
    ("put", 3, f"/relay-to/production/{TOKEN}"),
    ("other-path", 1, "/"),
    # Restricted endpoints (RFC 8292 §4): SHA-256 of py_vapid's seed key (the vapid seeds').
    ("post-vapid", 0, f"/relay-to/toot/production/{TOKEN}?vapid=4rCwv07gkwU6u1_t6LrjM9A9AKbAmWMdoKHdhybkAT0"),
    ("post-vapid-broken", 0, f"/relay-to/production/{TOKEN}?%76apid=4rCwv07gkwU6u1_t6LrjM9A9AKbAmWMdoKHdhybkAT&x"),
    # FCM: /relay-to/[<app>/]fcm/<token>[/extra] (a token of FCM's shape; one that is not).
    ("post-fcm", 0, "/relay-to/fcm/cXyz_-1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx/mastodon.example"),
    ("post-fcm-app-vapid", 0, "/relay-to/toot/fcm/cXyz_-1:APA91b?vapid=4rCwv07gkwU6u1_t6LrjM9A9AKbAmWMdoKHdhybkAT0"),
    ("post-fcm-bad-token", 0, "/relay-to/fcm/a.b%3A/x"),
]:
    write("route", name, bytes([selector]) + target.encode())
# The metatext dialect: what follows /push/; POST but for the "-get" seed.
for name, rest in {
    "push": f"{TOKEN}/42",
    "push-sandbox": f"{TOKEN}/acct%2F42?a=1&sandbox=true#x",
    "push-vapid-sandbox": f"{TOKEN}/42?vapid=4rCwv07gkwU6u1_t6LrjM9A9AKbAmWMdoKHdhybkAT0&sandbox=true",
    "push-app": f"org.joinmastodon.ios/{TOKEN.upper()}/42?sandbox=%74rue",
    "push-extra-segment": f"app/{TOKEN}/42/more",
    "push-missing-id": f"{TOKEN}/",
    "push-get": f"{TOKEN}/42",
    # A combining mark right after a slash (U+0359): one grapheme with the
    # slash, so only a byte-wise check sees "/push/" (found by the fuzzer).
    "push-combining-mark": f"\u0359app/{TOKEN}/\u0359id",
}.items():
    write("route", name, bytes([1 if name.endswith("-get") else 0]) + b"/push/" + rest.encode())
write("route", "raw-method", b"\x07\x04POSTX/relay-to/production/" + TOKEN.encode())

# ---- apps-file: [mode][…]; mode 0: the file's bytes; mode 1: statements
#      (see Fuzz/apps-file/AppsFileFuzzer.swift: [kind][choices…] per statement).
EXAMPLE = os.path.join(os.path.dirname(ROOT), "..", "config", "apps.example.toml")
with open(EXAMPLE, "rb") as f:
    shipped = f.read()
for name, text in {
    "shipped-example": shipped,
    # The fuzzer's environment sets PLAIN, ID, TOPIC, ENV, EMPTY, ZSECRET
    # (and the two variables the shipped example reads).
    "shipped-example-zsecret": shipped.replace(b"${TOOT_P12_PASSWORD}", b"${ZSECRET}"),
    "expanded-id": b'[[app]]\nid = "${ID}"\ntopic = "${TOPIC}"\nenvironments = ["${ENV}"]\np12-base64 = "${ZSECRET}"\n',
    "inline-tables": b'app = [{ id = "a", p12-file = "/a.p12", development = { p8 = "-----BEGIN", key-id = "K", team-id = "T" }, topic = "t" }]\n',
    "two-defaults": b'[[app]]\nid = "a"\np12-file = "/a"\ndefault = true\n[[app]]\nid = "b"\np12-file = "/b"\ndefault = true\n',
    "syntax-in-secret": b'[[app]]\nid = "a"\np12-file = "/a"\np12-password = "pa\\qss"\n',
    "big-number-secret": b'[[app]]\nid = "a"\np12-file = "/a"\np12-password = 123456789012345678901234567890\n',
    "deep-array": b"a = " + b"[" * 300 + b"]" * 300 + b"\n",
    "fcm-only": b'[[app]]\nid = "droid"\nfcm-credentials = "/etc/toot-relay/firebase.json"\n',
    "fcm-and-apns": b'[[app]]\nid = "toot"\np12-file = "/a"\nfcm-credentials = "/b.json"\n',
    "fcm-id": b'[[app]]\nid = "fcm"\nfcm-credentials = "/b.json"\n',
    "api-key-proxy-credentials": b'[[app]]\nid = "a"\np12-file = "/a"\n[[api-key]]\nname = "backend"\nkey = "backend-0123456789abcdef"\n'
                                 b'apps = ["a"]\njwt-key-id = "ABC123DEFG"\njwt-team-id = "DEF123GHIJ"\n'
                                 b'jwt-public-key = "/etc/backend-public.pem"\nclient-certificate-sha256 = "' + b"AB:" * 31 + b'AB"\n',
    "multiline-p8": b'[[app]]\nid = "a"\ntopic = "t"\nkey-id = "K"\nteam-id = "T"\np8 = """\n-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n"""\n',
}.items():
    write("apps-file", name, b"\x00" + text)
# Built files (mode 1). Statement kinds: 0 [[app]]; 2 [app.<env>] (0
# production, 1 development); 3 key = value (key index, value kind 0 =
# vocabulary word); 5 secret key = value (key index, kind 0 = text).
# Key indices: 0 id, 1 topic, 6 p12-file, 7 p8-file, 8 key-id, 9 team-id.
# Words: 0 toot, 1 feditext, 4 com.example.app, 7 /etc/x.p12, 8 /etc/k.p8,
# 9 ABC123DEFG, 10 TEAM123456.
write("apps-file", "built-p12", bytes([1, 0, 3, 0, 0, 0, 3, 6, 0, 7, 5, 0, 0, 8]) + b"hunter22")
write("apps-file", "built-p8-sandbox", bytes([1, 0, 3, 0, 0, 1, 3, 1, 0, 4, 3, 7, 0, 8, 3, 8, 0, 9, 3, 9, 0, 10,
                                              2, 1, 3, 8, 0, 9]))

# ---- vapid: [flags][now delta: 4 bytes LE, signed][audience][key hash][verify][…]
#      (see Fuzz/vapid/VAPIDFuzzer.swift). Real headers from py_vapid 1.9.6,
#      made once (its ECDSA signatures are random, and these seeds must not
#      change from run to run) with:
#        v = Vapid02(); v.generate_keys()
#        claims = {"aud": "https://relay.example:8443", "exp": 1900000000,
#                  "sub": "mailto:admin@mastodon.example"}
#        v.sign(claims); Vapid01(private_key=v.private_key).sign(claims)
#      The same headers are the fixtures of Tests/VAPIDTests (VAPIDFixtures.swift).
PY_KEY = "BHFy2wXj4a1CV2LATWMwOtmlIVxLdJIN5bp_0FuRzN45pFsjsfDT8sASrxRvLzTrsdPPuX3byJXg0wgYQn8WRF0"
PY_SIGNED = ("eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3JlbGF5LmV4YW1wbGU6ODQ0MyIsImV4cCI6MTkwMDAwMDAwMCwic3ViIjoibWFpbHRvOmFkbWluQG1hc3RvZG9uLmV4YW1wbGUifQ")
PY_VAPID02 = f"Authorization: vapid t={PY_SIGNED}.6MUiUL-QZxDlOXV4tMagOG0TNBO2si6hlTczbvQwOUNLvBA8kO9T5LCH-tm5IA03ucgq9KD_vmaH_PLsD1zuAA,k={PY_KEY}\n"
PY_VAPID01 = (f"Authorization: WebPush {PY_SIGNED}.vAJFsfVG--P3QKvp1oJ0-CfFJY4Ifh4B3Qk4w9rsYuXBenp2Xgj_q1e7JH8IV4LPq6L5ImRdO_z6FUE8KXtNwA\n"
              f"Crypto-Key: dh={b64url(DH)};p256ecdsa={PY_KEY}\nEncryption: salt={b64url(SALT)}\n")


def vapid(name, text, flags=0, now_delta=0, audience=0, verify=1):
    prefix = bytes([flags]) + struct.pack("<i", now_delta) + bytes([audience, 0, verify])
    write("vapid", name, prefix + text.encode())


vapid("py-vapid02", PY_VAPID02)
vapid("py-vapid01", PY_VAPID01)
vapid("py-vapid02-remembered", PY_VAPID02, flags=2)
vapid("py-vapid01-expired", PY_VAPID01, now_delta=10_000)
vapid("py-vapid02-too-far-ahead", PY_VAPID02, now_delta=-100_000)
vapid("py-vapid02-other-audience", PY_VAPID02, audience=1)
vapid("py-vapid02-bad-signature", PY_VAPID02, verify=0)
vapid("py-vapid02-capitals", PY_VAPID02.replace("vapid t=", "VAPID  t=").replace(",k=", " , k="))
vapid("no-authorization", "TTL: 60\nContent-Encoding: aes128gcm\n")
vapid("webpush-without-key", f"Authorization: WebPush {PY_SIGNED}.AAAA\nCrypto-Key: dh={b64url(DH)}\n")
vapid("vapid-two-keys", f"Authorization: vapid t={JWT}, k={PY_KEY}, k={b64url(VAPID_KEY)}\n")
vapid("vapid-alg-none", "Authorization: vapid t=eyJhbGciOiJub25lIn0." + JWT.split(".")[1] + f".,k={PY_KEY}\n")
# Built headers (flags bit 0), after [flags][now][audience 0][key hash 0][verify]:
# [form][JWT header][aud][exp delta: 2×uint16 LE][exp form][sub?][64-byte
# signature?][signature][encodings][65-byte key?][key][scheme][separator].
def built(name, flags=1, verify=1, form=0, header=0, aud=0, exp_form=0, encodings=0, scheme=0, separator=0):
    head = bytes([flags]) + struct.pack("<i", 0) + bytes([0, 0, verify])
    jwt = bytes([form, header, aud]) + struct.pack("<HH", 3600, 0) + bytes([exp_form, 1, 1]) + rand(64)
    write("vapid", name, head + jwt + bytes([encodings, 1]) + rand(64) + bytes([scheme, separator]))


built("built-vapid")
built("built-webpush-padded", form=1, header=1, encodings=0b1111, scheme=3, separator=1)
built("built-remembered-fractional", flags=3, aud=3, exp_form=1, scheme=2, separator=2)
built("built-both-forms-exp-string", form=2, exp_form=2)
built("built-alg-none-refused", header=2, verify=0)

# ---- provider-api: [mode][…] (see Fuzz/provider-api/ProviderAPIFuzzer.swift).
#      mode 0: [body limit][notifications][tokens][/api/push body]; mode 1:
#      fields spliced into one platform 1 notification; mode 2: the proxy,
#      [token length][token][header length: uint16 LE][header lines][body];
#      mode 3: fields spliced into one platform 2 notification.
def provider_push(name, body, limits=(255, 15, 63)):
    write("provider-api", name, bytes([0, *limits]) + body.encode())


def provider_fields(name, fields):
    write("provider-api", name, b"\x01" + fields.encode())


def provider_android_fields(name, fields):
    write("provider-api", name, b"\x03" + fields.encode())


def provider_proxy(name, token, headers, body):
    head = "".join(f"{k}: {v}\n" for k, v in headers).encode()
    write("provider-api", name, bytes([2, len(token)]) + token.encode() + struct.pack("<H", len(head)) + head + body.encode())


# gorush's README examples (appleboy/gorush README.md), with a real token.
provider_push("readme-ios", '{"notifications":[{"tokens":["%s"],"platform":1,"title":"Hello iOS","message":"Hello World iOS!"}]}' % TOKEN)
provider_push("readme-multiple-platforms", '{"notifications":[{"tokens":["ios_token"],"platform":1,"message":"Hello iOS!"},'
              '{"tokens":["android_token"],"platform":2,"message":"Hello Android!"}]}')
provider_push("readme-sound-badge", '{"notifications":[{"tokens":["%s","token_b"],"platform":1,"message":"You got your emails.",'
              '"badge":9,"sound":{"critical":1,"name":"default","volume":1.0}}]}' % TOKEN)
provider_push("readme-live-activity", '{"notifications":[{"tokens":["%s"],"platform":1,"push_type":"liveactivity",'
              '"topic":"com.example.app.push-type.liveactivity","event":"start","timestamp":1685952000,'
              '"content-state":{"homeScore":0,"awayScore":0,"minute":1,"period":"1H"},"attributes-type":"FootballMatchAttributes",'
              '"attributes":{"homeTeam":"Team 1","awayTeam":"Team 2","league":"Premier League"},'
              '"alert":{"title":"Team 1 vs Team 2","body":"Kick-off! The match has started."}}]}' % TOKEN)
provider_push("over-limits", '{"notifications":[{},{},{}]}', limits=(0, 1, 0))
provider_push("duplicate-key", '{"notifications":[{"badge":1,"badge":2}]}')
provider_push("deep", '{"notifications":[{"data":' + "[" * 70 + "]" * 70 + "}]}")
provider_fields("every-field", '"notif_id":"n","app":"toot","topic":"t","message":"m","title":"T","priority":"high",'
                '"content_available":true,"mutable_content":true,"expiration":1700000000,"apns_id":"3F2504E0-4F89-41D3-9A0C-0305E82C3301",'
                '"collapse_id":"c","push_type":"alert","badge":0,"category":"C","thread-id":"th","url-args":["a"],'
                '"alert":{"subtitle":"S","loc-key":"K","loc-args":["x"],"summary-arg-count":2},"development":true,'
                '"name":"n.caf","volume":0.5,"interruption_level":"passive","relevance-score":0.25,"stale-date":5,"dismissal-date":6')
provider_fields("live-activity-every-field", '"push_type":"liveactivity","topic":"com.example.app.push-type.liveactivity",'
                '"event":"start","timestamp":1685952000,"stale-date":1685955600,"dismissal-date":1685959200,'
                '"content-state":{"away":0,"home":1},"attributes-type":"MatchAttributes","attributes":{"awayTeam":"B"},'
                '"input-push-token":1,"input-push-channel":"dHN0LXNyY2gtY2hubA==","relevance-score":0.5,'
                '"alert":{"title":"Kick-off","body":"A vs B"}')
provider_fields("live-activity-wrong-types", '"input-push-token":true,"input-push-channel":7,"content-state":[1]')
provider_fields("live-activity-data-aps", '"event":"end","input-push-channel":"c","data":{"aps":{}}')
provider_fields("data-exact", '"data":{"i":1,"f":1.50,"big":123456789012345678901234567890,"s":"\\u0000\\ud83d\\ude00\\"","t":true}')
provider_fields("data-aps", '"message":"m","data":{"aps":{"alert":"own"}}')
provider_fields("sound-string", '"sound":"ping.aiff","message":"m"')
provider_fields("wrong-types", '"badge":"1","sound":5')
FCM_TOKEN = "cXyz-1_2:APA91b" + "Q" * 140
provider_push("status-android", '{"notifications":[{"tokens":["%s"],"platform":2,"message":"You have a new message",'
              '"data":{"chat_id":"0x02ab","count":3,"is_group":false}}]}' % FCM_TOKEN)
provider_push("android-topic-and-huawei", '{"notifications":[{"topic":"highScores","platform":2,"message":"m"},'
              '{"condition":"\'a\' in topics","tokens":["bad token","%s"],"platform":2},'
              '{"tokens":["h1"],"platform":3,"message":"Hello Huawei"}]}' % FCM_TOKEN)
provider_android_fields("android-every-field", '"notif_id":"n","app":"toot","title":"T","message":"m","image":"https://e.x/i.png",'
                        '"priority":"high","sound":"ping","collapse_key":"old","time_to_live":60,"fcm_options":{"analytics_label":"l"},'
                        '"notification":{"title":"N","body":"B","icon":"i","color":"#112244","android_channel_id":"ch"},'
                        '"android":{"ttl":"1.5s","collapse_key":"c","priority":"normal","restricted_package_name":"p",'
                        '"data":{"a":"1"},"direct_boot_ok":true,"notification":{"tag":"t","title_loc_key":"k",'
                        '"title_loc_args":["x"],"visibility":"PUBLIC","notification_priority":"PRIORITY_MAX","notification_count":2}}')
provider_android_fields("android-data", '"data":{"i":1,"f":1.50,"big":1e21,"small":1e-7,"o":{"b":[true,null],"a":"<&>"},"s":"\\u0000"}')
provider_android_fields("android-refused", '"topic":"bad topic","android":{"ttl":"-5s"}')
provider_android_fields("android-wrong-types", '"android":{"ttl":5},"notification":[]')
provider_proxy("apple-example", "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0",
               [("apns-topic", "com.example.MyApp"), ("apns-push-type", "alert"), ("authorization", "bearer eyAia2lkIjog"),
                ("apns-id", "eabeae54-14a8-11e5-b60b-1697f925ec7b"), ("apns-expiration", "0"), ("apns-priority", "10"),
                ("apns-collapse-id", "game1.score.identifier")], '{"aps":{"alert":"test"}}')
provider_proxy("duplicate-priority", TOKEN, [("apns-topic", "a.b"), ("apns-priority", "10"), ("apns-priority", "5")], '{"aps":{}}')
provider_proxy("not-json", TOKEN, [("apns-topic", "a.b")], "hello")
# Mode 2's headers and body go to the broadcast API's checks too: a
# broadcast, a channel's create body, a channel read.
provider_proxy("broadcast", TOKEN, [("apns-channel-id", "dGVzdC1jaGFubmVsLWlkMTI="), ("apns-push-type", "liveactivity"),
                                    ("apns-priority", "10"), ("apns-expiration", "0"),
                                    ("apns-request-id", "0b7e3c5a-1f2d-4c6b-9a8e-7d6c5b4a3f21")],
               '{"aps":{"timestamp":1718000000,"event":"update","content-state":{}}}')
provider_proxy("channel-create", TOKEN, [("apns-request-id", "0b7e3c5a-1f2d-4c6b-9a8e-7d6c5b4a3f21")],
               '{"message-storage-policy":1,"push-type":"LiveActivity"}')
provider_proxy("channel-read", TOKEN, [("apns-channel-id", "AAAA"), ("authorization", "bearer eyAia2lkIjog")], "")
# Provider tokens (stand-in signatures: the key id's bytes), APNs hosts, suffixed topics.
def stand_in_jwt(kid, team, iat, alg="ES256"):
    b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    header = b64(('{"alg":"%s","kid":"%s"}' % (alg, kid)).encode())
    claims = b64(('{"iss":"%s","iat":%d}' % (team, iat)).encode())
    return "bearer %s.%s.%s" % (header, claims, b64(kid.encode()))
provider_proxy("jwt-sandbox-voip", TOKEN, [("authorization", stand_in_jwt("KEY1", "TEAM1", 1800000000)),
                                           ("host", "api.sandbox.push.apple.com:443"), ("apns-topic", "com.example.app.voip"),
                                           ("apns-push-type", "voip")], '{"aps":{}}')
provider_proxy("jwt-expired-liveactivity", TOKEN, [("authorization", stand_in_jwt("KEY2", "TEAM1", 1799990000)),
                                                   ("host", "api.push.apple.com"),
                                                   ("apns-topic", "com.example.app.push-type.liveactivity"),
                                                   ("apns-push-type", "liveactivity")], '{"aps":{"event":"update"}}')
provider_proxy("jwt-hs256-unknown-kid", TOKEN, [("authorization", stand_in_jwt("NOKEY", "TEAM1", 1800000000, "HS256")),
                                                ("apns-topic", "a.b")], '{"aps":{}}')
provider_proxy("api-key-bearer", TOKEN, [("authorization", "Bearer fuzz-key-0123456789"), ("apns-topic", "a.b.voip-ptt"),
                                         ("apns-push-type", "pushtotalk")], '{"aps":{}}')
# xmlrpc: [flags][limits][…]. Raw bodies (flags 0): pyapns' calls as Python's
# xmlrpc.client writes them (pyapns' client.py uses allow_none=True), bad
# calls, and hostile documents; built calls (flags 1) from random bytes.
def xmlrpc(name, body, limits=0):
    write("xmlrpc", name, bytes([0, limits]) + body)


def xmlrpc_call(name, method, *args, limits=0):
    xmlrpc(name, xmlrpc_client.dumps(args, method, allow_none=True).encode(), limits)


XMLRPC_PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n" \
    "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n"
XMLRPC_NOTIFICATION = {"aps": {"alert": {"title": "Toot", "body": "New mention"}, "badge": 3, "sound": "default",
                               "content-available": True, "mutable-content": 1}, "x": 1.25, "n": None}
xmlrpc_call("pyapns-provision-pem", "provision", "myapp", XMLRPC_PEM, "sandbox", 15)
xmlrpc_call("pyapns-provision-path", "provision", "myapp", "/etc/pyapns/cert.pem", "production")
xmlrpc_call("pyapns-provision-bytes", "provision", "myapp", XMLRPC_PEM.encode(), "production", 30)
xmlrpc_call("pyapns-provision-bad-environment", "provision", "myapp", XMLRPC_PEM, "development", 15)
xmlrpc_call("pyapns-notify-one", "notify", "myapp", " ".join([TOKEN[i:i + 8] for i in range(0, 64, 8)]),
            {"aps": {"alert": "Hello!"}})
xmlrpc_call("pyapns-notify-lists", "notify", "myapp", [TOKEN, TOKEN.upper()], [XMLRPC_NOTIFICATION, {"aps": {}}])
xmlrpc_call("pyapns-notify-unequal", "notify", "myapp", [TOKEN, TOKEN], [XMLRPC_NOTIFICATION])
xmlrpc_call("pyapns-notify-bad-token", "notify", "myapp", "zz" + TOKEN[2:], XMLRPC_NOTIFICATION)
xmlrpc_call("pyapns-feedback", "feedback", "myapp")
xmlrpc_call("unknown-method", "system.listMethods")
xmlrpc_call("every-type", "echo", 1, -(2 ** 31), True, "a<&>\r\n", 1.5e-7,
            xmlrpc_client.DateTime("20261123T20:55:14"), b"\x00\xff", [], {}, None)
xmlrpc_call("small-limits", "notify", "myapp", [TOKEN] * 3, [XMLRPC_NOTIFICATION] * 3, limits=1)
xmlrpc("bare-string", b"<methodCall><methodName>feedback</methodName><params><param><value>myapp</value>"
       b"</param></params></methodCall>")
xmlrpc("xxe-file", b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
       b"<methodCall><methodName>&x;</methodName></methodCall>")
xmlrpc("billion-laughs", b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">'
       b'<!ENTITY c "&b;&b;&b;&b;&b;">]><methodCall><methodName>&c;</methodName></methodCall>')
xmlrpc("deep-arrays", b"<methodCall><methodName>echo</methodName><params><param>"
       + b"<value><array><data>" * 30 + b"</data></array></value>" * 30 + b"</param></params></methodCall>")
xmlrpc("undeclared-entity", b"<methodCall><methodName>a&x;</methodName></methodCall>")
xmlrpc("cdata-and-comments", b"<methodCall><!-- c --><methodName>notify</methodName><params><param><value>"
       b"<string><![CDATA[<&>]]></string></value></param></params></methodCall>")
for index in range(3):
    write("xmlrpc", f"built-{index}", bytes([1, index % 2, index]) + rand(120))

# ---- api-request: [mode][…] (see Fuzz/api-request/APIRequestFuzzer.swift). Mode 0: [method
#      selector][target]; mode 1: an Authorization value against the target's
#      two keys.
def api_route(name, target, method=0):
    write("api-request", name, bytes([0, method]) + target.encode())


def api_authorization(name, value):
    write("api-request", name, b"\x01" + value.encode())


api_route("push", "/api/push")
api_route("device", "/3/device/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
api_route("feedback", "/api/feedback/toot%2e", method=1)
api_route("broadcast", "/development/4/broadcasts/apps/com.example.app")
api_route("channels", "/1/apps/com.example.app/channels", method=6)
api_route("all-channels", "/1/apps/com.example.app/all-channels?x", method=1)
api_authorization("bearer", "Bearer toot-key-0123456789abcdef")
api_authorization("basic-user", "basic " + base64.b64encode(b"every-app-key-0123456789").decode())
api_authorization("basic-password", "Basic " + base64.b64encode(b"x:toot-key-0123456789abcdef").decode())

# ---- redis-reply: [mode][limits][seed: 8 bytes][rest] (see
#      Fuzz/redis-reply/RedisReplyFuzzer.swift). Mode 0: what a server sent,
#      fed whole and in pieces the seed draws; mode 1: a command's arguments,
#      each [length][bytes], formatted and read back. limits 1: 64 bytes and
#      8 elements, else 64 KiB and 4,096.
def redis_reply(name, stream, limits=0, seed=0):
    write("redis-reply", name, bytes([0, limits]) + struct.pack(">Q", seed) + stream)


def redis_command(name, *arguments):
    body = b"".join(bytes([len(argument)]) + argument for argument in arguments)
    write("redis-reply", name, bytes([1, 0]) + struct.pack(">Q", 0) + body)


def bulk(data):
    return b"$%d\r\n" % len(data) + data + b"\r\n"


def array(*items):
    return b"*%d\r\n" % len(items) + b"".join(items)


redis_reply("every-type", b"+OK\r\n-ERR unknown command\r\n:42\r\n:-9223372036854775808\r\n" + bulk(b"hello")
            + b"$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n" + array(bulk(b"a"), b":1\r\n", b"$-1\r\n"))
redis_reply("xreadgroup", array(array(bulk(b"pushes"), array(array(bulk(b"1700000000000-0"),
                                                                   array(bulk(b"token"), bulk(b"ab12"), bulk(b"payload"), bulk(b"{}")))))),
            seed=1)
redis_reply("xautoclaim", array(bulk(b"0-0"), array(array(bulk(b"1-0"), array(bulk(b"f"), bulk(b"v")))), array()), seed=2)
redis_reply("binary-bulk", bulk(b"\x00\r\n\xff\xfe$*\r\n") + bulk(rand(300)), seed=3)
redis_reply("pipelined-integers", b"".join(b":%d\r\n" % n for n in range(1, 200)), seed=4)
redis_reply("incomplete", b"+OK\r\n$10\r\nhel", seed=5)
redis_reply("negative-bulk-length", b"$-5\r\n")
redis_reply("huge-array-count", b"*99999999999\r\n")
redis_reply("int-max-array-count", b"*2147483647\r\n")
redis_reply("bad-type-byte", b"+OK\r\n!oops\r\n")
redis_reply("bad-integer", b":12ab\r\n")
redis_reply("deep-nesting", b"*1\r\n" * 12 + b":1\r\n")
redis_reply("nesting-at-the-limit", b"*1\r\n" * 7 + b":1\r\n")
redis_reply("line-without-end", b"+OK" + b"K" * 2000)
redis_reply("long-error", b"-ERR " + b"x" * 4000 + b"\r\n")
redis_reply("small-limits", array(bulk(b"a" * 40), b":1\r\n") + array(*[b":1\r\n"] * 9), limits=1, seed=6)
redis_reply("small-limits-bytes", bulk(b"b" * 70), limits=1, seed=7)
redis_command("command-set", b"SET", b"key", b"value")
redis_command("command-binary", b"SET", b"k\x00\r\n", rand(200), b"")

# ---- apns-answer: [status selector][Retry-After length][Retry-After][body]
# status selector: index into 200, 400, 403, 404, 405, 410, 413, 429, 500, 503, 502
def apns_answer(name, selector, retry_after, body):
    write("apns-answer", name, bytes([selector, len(retry_after)]) + retry_after + body)


apns_answer("503-retry-after", 9, b"3", b'{"reason":"ServiceUnavailable"}')
apns_answer("429-retry-after-blanks", 7, b" \t120 ", b'{"reason":"TooManyRequests"}')
apns_answer("410-timestamp", 5, b"", b'{"reason":"Unregistered","timestamp":1454402113000}')
apns_answer("http-date", 9, b"Wed, 21 Oct 2015 07:28:00 GMT", b'{"reason":"Shutdown"}')
apns_answer("overflowing-seconds", 8, b"9" * 40, b'{"reason":"InternalServerError","extra":{"a":[1,"}"]}}')
apns_answer("200-with-body", 0, b"5", b'{"reason":"BadDeviceToken"}')
apns_answer("not-json", 10, b"-1", b"<html>bad gateway</html>")

# ---- fcm-answer: [mode][…] (see Fuzz/fcm-answer/FCMAnswerFuzzer.swift).
# Mode 0, a send's answer: [status index][Retry-After / 15][refreshed] body;
# mode 1, the token endpoint's: [status index] body; mode 2: a service
# account's file; mode 3: the console's file with members spliced in.
# Bodies as FCM and Google's token endpoint send them (FCM's error-code
# page, recorded client fixtures); keys are fakes of the right shape
# holding the fuzzer's marker.
FCM_STATUSES = [200, 400, 401, 403, 404, 429, 500, 502, 503, 504, 201, 204, 301, 413, 0, 599, 600, 999]


def fcm_error(code, status, message, *details):
    import json
    error = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return json.dumps({"error": error}, indent=2).encode()


def fcm_detail(error_code):
    return {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code}


def bad_request(field, description):
    return {"@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": field, "description": description}]}


def fcm_send(name, status, body, retry_after=0, refreshed=0):
    write("fcm-answer", "send-" + name, bytes([0, FCM_STATUSES.index(status), retry_after, refreshed]) + body)


fcm_send("200", 200, b'{"name":"projects/toot-relay-test/messages/0:1700000000000000%31bd1c9631bd1c96"}')
fcm_send("unregistered", 404, fcm_error(404, "NOT_FOUND", "Requested entity was not found.", fcm_detail("UNREGISTERED")))
fcm_send("invalid-token", 400, fcm_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.",
                                         fcm_detail("INVALID_ARGUMENT"),
                                         bad_request("message.token", "Invalid registration token")))
fcm_send("invalid-token-documented", 400, fcm_error(400, "INVALID_ARGUMENT",
                                                    "The registration token is not a valid FCM registration token",
                                                    fcm_detail("INVALID_ARGUMENT")))
fcm_send("invalid-data", 400, fcm_error(400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value' (TYPE_STRING), 12",
                                        bad_request("message.data[0].value",
                                                    "Invalid value at 'message.data[0].value' (TYPE_STRING), 12")))
fcm_send("missing-recipient", 400, fcm_error(400, "INVALID_ARGUMENT", "Recipient of the message is not set.",
                                             bad_request("message", "Recipient of the message is not set."),
                                             fcm_detail("INVALID_ARGUMENT")))
fcm_send("too-large", 400, fcm_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument."))
fcm_send("sender-id-mismatch", 403, fcm_error(403, "PERMISSION_DENIED", "SenderId mismatch", fcm_detail("SENDER_ID_MISMATCH")))
fcm_send("quota-exceeded", 429, fcm_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Send requests'.",
                                          fcm_detail("QUOTA_EXCEEDED")), retry_after=8)
fcm_send("internal", 500, fcm_error(500, "INTERNAL", "Internal error encountered.", fcm_detail("INTERNAL")))
fcm_send("unavailable", 503, fcm_error(503, "UNAVAILABLE", "The service is currently unavailable.", fcm_detail("UNAVAILABLE")),
         retry_after=2)
fcm_send("third-party-auth", 401, fcm_error(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service",
                                            fcm_detail("THIRD_PARTY_AUTH_ERROR")))
fcm_send("unauthenticated", 401, fcm_error(401, "UNAUTHENTICATED",
                                           "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                                           "login cookie or other valid authentication credential."))
fcm_send("unauthenticated-refreshed", 401, fcm_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
         refreshed=1)
fcm_send("permission-denied", 403, fcm_error(403, "PERMISSION_DENIED",
                                             "Permission 'cloudmessaging.messages.create' denied on resource.",
                                             {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                              "reason": "IAM_PERMISSION_DENIED"}))
fcm_send("project-not-found", 404, fcm_error(404, "NOT_FOUND", "Requested entity was not found."))
fcm_send("front-end-502", 502, b"<!DOCTYPE html>\n<html lang=en>\n<title>Error 502 (Server Error)!!1</title>\n"
         b"<p>The server encountered a temporary error and could not complete your request.")
fcm_send("unregistered-on-a-503", 503, fcm_error(503, "NOT_FOUND", "x", fcm_detail("UNREGISTERED")))
fcm_send("deep", 400, b'{"error":{"details":' + b"[" * 70 + b"]" * 70 + b"}}")


def fcm_token(name, status, body):
    write("fcm-answer", "token-" + name, bytes([1, FCM_STATUSES.index(status)]) + body)


fcm_token("200", 200, b'{\n  "access_token": "ya29.c.b0AXv0zTPqR_example-Token~+/==",\n  "expires_in": 3599,\n'
          b'  "token_type": "Bearer"\n}')
fcm_token("invalid-grant", 400, b'{"error":"invalid_grant","error_description":"Invalid JWT Signature."}')
fcm_token("invalid-grant-time", 400, b'{\n  "error": "invalid_grant",\n  "error_description": "Invalid JWT: Token must be '
          b'a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."\n}')
fcm_token("invalid-client", 401, b'{"error":"invalid_client","error_description":"The OAuth client was not found."}')
fcm_token("invalid-scope", 400, b'{"error":"invalid_scope"}')
fcm_token("503-html", 503, b"<html><title>Error 503</title></html>")
fcm_token("200-without-type", 200, b'{"access_token":"abc","expires_in":60}')

FCM_KEY = ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANZq9KeyMarker7Xw0123456789abcdef\nQUJDREVGR0g=\n"
           "-----END PRIVATE KEY-----\n")
FCM_ACCOUNT = [
    ("type", "service_account"), ("project_id", "toot-relay-test"),
    ("private_key_id", "0123456789abcdef0123456789abcdef01234567"), ("private_key", FCM_KEY),
    ("client_email", "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com"),
    ("client_id", "123456789012345678901"), ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
    ("token_uri", "https://oauth2.googleapis.com/token"),
    ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
    ("universe_domain", "googleapis.com"),
]


def fcm_account(name, changes=None, raw=None):
    import json
    members = dict(FCM_ACCOUNT)
    for key, value in (changes or {}).items():
        if value is None:
            members.pop(key, None)
        else:
            members[key] = value
    text = raw if raw is not None else json.dumps(members, indent=2).encode()
    write("fcm-answer", "account-" + name, b"\x02" + text)


fcm_account("console")
fcm_account("without-token-uri", {"token_uri": None})
fcm_account("pkcs1", {"private_key": FCM_KEY.replace("PRIVATE KEY", "RSA PRIVATE KEY")})
fcm_account("escaped-twice", {"private_key": FCM_KEY.replace("\n", "\\n")})
fcm_account("encrypted", {"private_key": FCM_KEY.replace("PRIVATE KEY", "ENCRYPTED PRIVATE KEY")})
fcm_account("authorized-user", {"type": "authorized_user"})
fcm_account("raw-line-breaks", raw=b'{"type": "service_account", "private_key": "' + FCM_KEY.encode() + b'"}')


def fcm_splice(name, *splices):
    data = b"\x03"
    for choice, raw, value in splices:
        data += bytes([choice, raw, len(value) & 0xFF, len(value) >> 8]) + value
    write("fcm-answer", "spliced-" + name, data)


fcm_splice("project-path", (1, 0, b"../admin"))
fcm_splice("key-certificate", (3, 0, b"-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"))
fcm_splice("email-number", (4, 1, b"42"), (6, 0, b"https://127.0.0.1:8443/token"))
fcm_splice("type-removed", (7, 0, b""))

# ---- fleet-values: [mode][rest] (see Fuzz/fleet-values/FleetValuesFuzzer.swift).
# Mode 0: a feedback list's value; mode 1: a stream entry's fields, each
# [name length byte][name][value length, 2 bytes little-endian][value], as
# the accept path writes them for an iOS token and for an Android one.
FCM_TOKEN = "cXyz_-1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"


def stream_fields(name, *fields):
    data = b"\x01"
    for field, value in fields:
        value = value.encode() if isinstance(value, str) else value
        data += bytes([len(field)]) + field.encode() + struct.pack("<H", len(value)) + value
    write("fleet-values", "fields-" + name, data)


write("fleet-values", "feedback-ios", b"\x00" + f"1 production 1764114000123 Unregistered {TOKEN}".encode())
write("fleet-values", "feedback-android", b"\x00" + f"1 android 1764114000123 UNREGISTERED {FCM_TOKEN}".encode())
# Mode 5: a service account's shared FCM access token, and the mark of an
# instance renewing it.
write("fleet-values", "access-token", b"\x05" + b"1764117300 ya29.c.b0AXv0zTOEbVd-_~+/x3Kq==")
write("fleet-values", "access-token-renewing", b"\x05" + b"renewing relay-1-4242-9f3a1c2b")
SOURCE = (("nid", "n-1"), ("plat", "1"), ("msg", "You have a new message"))
stream_fields("ios", ("v", "1"), ("app", "default"), ("env", "production"), ("tok", TOKEN), ("dev", TOKEN),
              ("hdr", "apns-push-type:alert\napns-priority:10"), ("pl", '{"aps":{"alert":"hi"}}'), ("id", ""),
              ("at", "1800000000123"), ("try", "0"), *SOURCE)
stream_fields("android", ("v", "1"), ("app", "default"), ("svc", "fcm"), ("tok", FCM_TOKEN),
              ("pl", '{"message":{"notification":{"body":"You have a new message"},"data":{"n":"3"},'
                     f'"token":"{FCM_TOKEN}"}}}}'),
              ("at", "1800000000123"), ("try", "1"), ("nid", "n-2"), ("plat", "2"), ("msg", "You have a new message"))

# ---- http2-server: [flags][pieces seed] then a client's bytes (see
# Fuzz/http2-server/HTTP2ServerFuzzer.swift); flags: 1 preface first,
# 2 small limits, 4 also in pieces.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def h2_block(fields):
    """Literal fields without indexing (RFC 7541 §6.2.2), lengths below 127."""
    return b"".join(b"\x00" + bytes([len(n)]) + n.encode() + bytes([len(v)]) + v.encode() for n, v in fields)


def h2_request(method, path, extra=()):
    return h2_block([(":method", method), (":scheme", "https"), (":path", path),
                     (":authority", "api.push.apple.com"), *extra])


H2_DEVICE = h2_request("POST", f"/3/device/{TOKEN}", [("authorization", "bearer all-apps-key-0123456789"),
                                                       ("apns-topic", "com.example.app"), ("apns-push-type", "alert")])
write("http2-server", "healthz", bytes([1, 7]) + h2_frame(1, 5, 1, h2_request("GET", "/healthz")))
write("http2-server", "device-in-pieces", bytes([5, 99]) + h2_frame(1, 4, 1, H2_DEVICE)
      + h2_frame(0, 0, 1, b'{"aps":') + h2_frame(0, 1, 1, b'{"alert":"hi"}}'))
write("http2-server", "own-preface", bytes([4, 3]) + H2_PREFACE + h2_frame(4, 0, 0, struct.pack(">HI", 3, 100))
      + h2_frame(4, 1, 0) + h2_frame(1, 5, 1, h2_request("GET", "/healthz", [("host", "relay.example")])))
write("http2-server", "continuation", bytes([5, 42]) + h2_frame(1, 0, 1, H2_DEVICE[:40])
      + h2_frame(9, 0, 1, H2_DEVICE[40:80]) + h2_frame(9, 4, 1, H2_DEVICE[80:]) + h2_frame(0, 1, 1, b"{}"))
write("http2-server", "rapid-reset", bytes([1, 0]) + b"".join(
    h2_frame(1, 5, 2 * i + 1, h2_request("GET", "/healthz")) + h2_frame(3, 0, 2 * i + 1, struct.pack(">I", 8))
    for i in range(12)))
write("http2-server", "small-limits", bytes([7, 5]) + h2_frame(1, 4, 1, h2_request("POST", "/api/push",
      [("x-filler", "f" * 120), ("x-more", "m" * 120)])) + h2_frame(0, 1, 1, b"x" * 100)
      + h2_frame(1, 5, 3, h2_request("GET", "/healthz")))
write("http2-server", "control-frames", bytes([1, 9]) + h2_frame(6, 0, 0, b"pingpong") + h2_frame(8, 0, 0, struct.pack(">I", 1 << 20))
      + h2_frame(2, 0, 1, struct.pack(">IB", 0, 16)) + h2_frame(1, 0x25, 1, struct.pack(">IB", 0, 16) + h2_request("GET", "/x"))
      + h2_frame(7, 0, 0, struct.pack(">II", 1, 0)))
write("http2-server", "bad-hpack", bytes([1, 1]) + h2_frame(1, 5, 1, b"\xff\xff\xff\x7f"))
write("http2-server", "head-and-trailers", bytes([5, 17]) + h2_frame(1, 4, 1, h2_request("HEAD", "/healthz"))
      + h2_frame(1, 5, 1, h2_block([("x-trailer", "t")])))

if __name__ == "__main__":
    for target in sorted(os.listdir(ROOT)):
        print(target, len(os.listdir(os.path.join(ROOT, target))), "seeds")
