"""Every bad input of WIRE.md §1 and §5 gets its status; the connection stays
usable where HTTP allows (relay-level refusals), and is closed after framing
errors (the next request's start is unknown)."""

import time

import pytest

import relaytest as rt

DH = rt.b64url(b"\x04" + b"\x07" * 64)
SALT = rt.b64url(b"\x09" * 16)
GOOD_AESGCM = [("Content-Encoding", "aesgcm"), ("TTL", "172800"), ("Crypto-Key", f"dh={DH};p256ecdsa=AAAA"),
               ("Encryption", f"salt={SALT}")]
BODY = b"\xab" * 64
AES128_BODY = b"\x01" * 16 + (4096).to_bytes(4, "big") + bytes([65]) + b"\x04" + b"\x05" * 64 + b"\x00" * 40


def without(headers, name):
    return [(key, value) for key, value in headers if key.lower() != name.lower()]


def replaced(headers, name, value):
    return without(headers, name) + [(name, value)]


PATH = f"/relay-to/production/{rt.TOKEN}"

# (description, request bytes, expected status, extra header check)
KEEPS_CONNECTION = [
    ("unknown environment", rt.request_bytes("POST", f"/relay-to/staging/{rt.TOKEN}", GOOD_AESGCM, BODY), 404),
    ("odd-length token", rt.request_bytes("POST", f"/relay-to/production/{rt.TOKEN}a", GOOD_AESGCM, BODY), 404),
    ("short token", rt.request_bytes("POST", "/relay-to/production/abcdef", GOOD_AESGCM, BODY), 404),
    ("non-hex token", rt.request_bytes("POST", "/relay-to/production/" + "zz" * 32, GOOD_AESGCM, BODY), 404),
    ("token over 200 digits", rt.request_bytes("POST", "/relay-to/production/" + "ab" * 101, GOOD_AESGCM, BODY), 404),
    ("other path", rt.request_bytes("POST", "/push", GOOD_AESGCM, BODY), 404),
    ("GET on a relay path", rt.request_bytes("GET", PATH), 405),
    ("DELETE on a relay path", rt.request_bytes("DELETE", PATH), 405),
    ("POST on health", rt.request_bytes("POST", "/relay-to/_health"), 405),
    ("missing Content-Encoding", rt.request_bytes("POST", PATH, without(GOOD_AESGCM, "Content-Encoding"), BODY), 415),
    ("gzip Content-Encoding", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Content-Encoding", "gzip"), BODY), 415),
    ("aesgcm without Crypto-Key", rt.request_bytes("POST", PATH, without(GOOD_AESGCM, "Crypto-Key"), BODY), 400),
    ("aesgcm without dh", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Crypto-Key", "p256ecdsa=AAAA"), BODY), 400),
    ("aesgcm dh not base64url", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Crypto-Key", "dh=***"), BODY), 400),
    ("aesgcm without Encryption", rt.request_bytes("POST", PATH, without(GOOD_AESGCM, "Encryption"), BODY), 400),
    ("aesgcm salt wrong size", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Encryption", "salt=AAAA"), BODY), 400),
    ("aes128gcm short header", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Content-Encoding", "aes128gcm"),
                                                b"\x01" * 20), 400),
    ("aes128gcm rs below 18", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Content-Encoding", "aes128gcm"),
                                               AES128_BODY[:16] + (17).to_bytes(4, "big") + AES128_BODY[20:]), 400),
    ("aes128gcm keyid not 65 bytes", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "Content-Encoding", "aes128gcm"),
                                                      AES128_BODY[:20] + bytes([3]) + AES128_BODY[21:]), 400),
    ("missing TTL", rt.request_bytes("POST", PATH, without(GOOD_AESGCM, "TTL"), BODY), 400),
    ("non-numeric TTL", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "TTL", "1d"), BODY), 400),
    ("negative TTL", rt.request_bytes("POST", PATH, replaced(GOOD_AESGCM, "TTL", "-5"), BODY), 400),
    ("unknown Urgency", rt.request_bytes("POST", PATH, GOOD_AESGCM + [("Urgency", "urgent")], BODY), 400),
    ("repeated Urgency", rt.request_bytes("POST", PATH, GOOD_AESGCM + [("Urgency", "low"), ("Urgency", "high")], BODY), 400),
    ("Topic too long", rt.request_bytes("POST", PATH, GOOD_AESGCM + [("Topic", "a" * 33)], BODY), 400),
    ("Topic outside base64url", rt.request_bytes("POST", PATH, GOOD_AESGCM + [("Topic", "a b")], BODY), 400),
    ("body over the 4096 bytes a push service takes", rt.request_bytes("POST", PATH, GOOD_AESGCM, b"\x01" * 4097), 413),
    ("extra too long for any payload", rt.request_bytes("POST", PATH + "/" + "x" * 4100, GOOD_AESGCM, b"\x01" * 100), 413),
]


@pytest.mark.parametrize("description,data,status", KEEPS_CONNECTION, ids=[row[0] for row in KEEPS_CONNECTION])
def test_refused_and_connection_stays_usable(relay, description, data, status):
    client = rt.Client(relay.port)
    client.send(data)
    response = client.response()
    assert response.status == status, (description, response)
    assert response.body.endswith(b"\n") and response.body.count(b"\n") == 1
    if status == 405:
        assert response.header("Allow") in ("POST", "GET, HEAD")
    client.send(rt.health_request())
    assert client.response().status == 200
    client.close()


def test_ttl_is_capped_at_30_days(relay):
    client = rt.Client(relay.port)
    subscriber = rt.Subscriber()
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + PATH, b"long", ttl=99999999999999999999)
    client.send(rt.request_bytes("POST", PATH, headers, body))
    response = client.response()
    assert response.status == 201
    assert response.header("TTL") == "2592000"
    client.close()


CLOSES_CONNECTION = [
    ("garbage request line", b"HELLO\r\n\r\n", 400),
    ("conflicting Content-Length", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    ("Content-Length with chunked", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ("bad chunk size", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    ("body over the 8 KiB cap", b"POST " + PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n", 413),
    ("chunked body over the cap", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3000\r\n" + b"a" * 0x3000, 413),
    ("header block over 16 KiB", b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 17000 + b"\r\n\r\n", 431),
]


@pytest.mark.parametrize("description,data,status", CLOSES_CONNECTION, ids=[row[0] for row in CLOSES_CONNECTION])
def test_framing_errors_close(relay, description, data, status):
    client = rt.Client(relay.port)
    try:
        client.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    response = client.response()
    assert response.status == status, (description, response)
    assert response.header("Connection") == "close"
    assert client.closed_by_peer()
    client.close()


def test_header_and_body_timeouts_close_without_an_answer(spawn, emulator):
    # Not a 408: Pleroma and Akkoma delete a subscription on any 4xx.
    relay = spawn.relay("relay-timeouts", emulator.port, HEADER_TIMEOUT=1, BODY_TIMEOUT=1, KEEPALIVE_TIMEOUT=1)
    slow_head = rt.Client(relay.port)
    slow_head.send(b"POST " + PATH.encode() + b" HTTP/1.1\r\nHost: x\r\n")
    slow_body = rt.Client(relay.port)
    slow_body.send(b"POST " + PATH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
    started = time.monotonic()
    assert slow_head.closed_by_peer() and slow_body.closed_by_peer()
    assert time.monotonic() - started < 5
    assert relay.log_contains("request head not received in time: closed without an answer")
    assert relay.log_contains("request body not received in time: closed without an answer")
    idle = rt.Client(relay.port)
    idle.send(rt.health_request())
    assert idle.response().status == 200
    assert idle.closed_by_peer()  # keep-alive timeout: closed without a response


def test_expect_continue_chunked_and_http10(relay):
    subscriber = rt.Subscriber()
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + PATH, b"framings")
    head = "\r\n".join([f"POST {PATH} HTTP/1.1", "Host: x", *[f"{k}: {v}" for k, v in headers],
                        f"Content-Length: {len(body)}", "Expect: 100-continue"]) + "\r\n\r\n"
    client = rt.Client(relay.port)
    client.send(head.encode())
    assert client.response().status == 100
    client.send(body)
    assert client.response().status == 201

    chunked_head = "\r\n".join([f"POST {PATH} HTTP/1.1", "Host: x", *[f"{k}: {v}" for k, v in headers],
                                "Transfer-Encoding: chunked"]) + "\r\n\r\n"
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:]))
    client.send(chunked_head.encode() + chunks + b"0\r\n\r\n")
    assert client.response().status == 201
    client.close()

    old = rt.Client(relay.port)
    old.send(b"GET /relay-to/_health HTTP/1.0\r\n\r\n")
    response = old.response()
    assert response.status == 200 and response.body == b"OK"
    assert old.closed_by_peer()
    old.close()

    kept = rt.Client(relay.port)
    kept.send(b"GET /relay-to/_health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert kept.response().header("Connection") == "keep-alive"
    kept.send(b"HEAD /relay-to/_health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head_response = kept.response(head_only=True)
    assert head_response.status == 200 and head_response.header("Content-Length") == "2"
    assert kept.closed_by_peer()
    kept.close()
