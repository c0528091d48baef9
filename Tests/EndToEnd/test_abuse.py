"""Abuse (RELIABILITY.md §4): slowloris, 10,000 idle connections, oversized
and malformed framing, hostile bytes in the path and headers. Bounded: the
whole file runs in well under two minutes."""

import json
import os
import resource
import socket
import statistics
import time
import urllib.parse

import pytest

import relaytest as rt

PATH = f"/relay-to/production/{rt.TOKEN}"


def raise_open_files(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(needed, soft)), hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        pytest.fail(f"this test needs {needed} open files; the hard limit is {hard} (raise it: ulimit -Hn)")


def timed_push(port, token, body_headers):
    """One push on a fresh connection: (status, seconds)."""
    body, headers = body_headers
    started = time.monotonic()
    client = rt.Client(port, timeout=10)
    client.send(rt.request_bytes("POST", f"/relay-to/production/{token}", headers, body))
    status = client.response().status
    client.close()
    return status, time.monotonic() - started


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def open_connections(port, count):
    sockets = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=10))
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def closed_by_peer(sock):
    """True when the peer has closed (EOF or reset), after reading whatever
    it sent before; never blocks."""
    sock.setblocking(False)
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.setblocking(True)


def test_2000_slowloris_connections_do_not_delay_other_senders(spawn):
    raise_open_files(4500)
    emulator = spawn.emulator("abuse-slowloris-emulator")
    relay = spawn.relay("abuse-slowloris", emulator.port, HEADER_TIMEOUT=8)
    prepared = rt.prepared_push(b"slowloris")
    baseline = []
    for index in range(100):
        status, seconds = timed_push(relay.port, rt.plain_token(index), prepared)
        assert status == 201
        baseline.append(seconds)

    attackers = open_connections(relay.port, 2000)
    try:
        check_slowloris(relay, prepared, baseline, attackers)
    finally:
        for sock in attackers:
            sock.close()
    assert timed_push(relay.port, rt.plain_token(5000), prepared)[0] == 201


def check_slowloris(relay, prepared, baseline, attackers):
    request = rt.request_bytes("POST", PATH, prepared[1], prepared[0])
    opened = time.monotonic()
    during = []
    sent_bytes = 0
    # A header byte every 2 s on each of the 2,000 connections for 6 s;
    # in between, normal senders push and are timed.
    while time.monotonic() - opened < 6:
        for sock in attackers:
            sock.send(request[sent_bytes:sent_bytes + 1])
        sent_bytes += 1
        round_end = time.monotonic() + 2
        while time.monotonic() < round_end:
            status, seconds = timed_push(relay.port, rt.plain_token(1000 + len(during)), prepared)
            assert status == 201
            during.append(seconds)
            time.sleep(0.01)
    base_median, base_p99 = statistics.median(baseline), percentile(baseline, 0.99)
    median, p99 = statistics.median(during), percentile(during, 0.99)
    print(f"slowloris: baseline median {base_median * 1000:.2f} ms p99 {base_p99 * 1000:.2f} ms; "
          f"during median {median * 1000:.2f} ms p99 {p99 * 1000:.2f} ms over {len(during)} pushes")
    assert median <= 2 * base_median + 0.005
    assert p99 <= 3 * base_p99 + 0.050
    # The header timeout (8 s) closes every one of them, without an answer.
    deadline = opened + 8 + 4
    open_ones = list(attackers)
    while open_ones and time.monotonic() < deadline:
        time.sleep(0.5)
        open_ones = [sock for sock in open_ones if not closed_by_peer(sock)]
    assert not open_ones, f"{len(open_ones)} slowloris connections outlived HEADER_TIMEOUT"


@pytest.mark.parametrize("cap", [16384, 5000])
def test_10000_idle_connections_held_or_refused_within_the_cap(spawn, cap):
    raise_open_files(10000 + 500)
    emulator = spawn.emulator(f"abuse-idle-emulator-{cap}")
    relay = spawn.relay(f"abuse-idle-{cap}", emulator.port, MAX_CONNECTIONS=cap, THREADS=2,
                        HEADER_TIMEOUT=60, KEEPALIVE_TIMEOUT=60)
    prepared = rt.prepared_push(b"idle")
    assert timed_push(relay.port, rt.plain_token(1), prepared)[0] == 201
    rss_before, _ = rt.rss_kib(relay.popen.pid)
    idle = []
    try:
        check_idle_connections(relay, cap, prepared, rss_before, idle)
    finally:
        for sock in idle:
            sock.close()
    # Closed ones free their slots: a new sender is served again.
    deadline = time.monotonic() + 10
    while True:
        try:
            if timed_push(relay.port, rt.plain_token(3), prepared)[0] == 201:
                break
        except (OSError, EOFError):
            pass
        assert time.monotonic() < deadline, "slots not freed after the idle connections closed"
        time.sleep(0.2)
    assert relay.popen.poll() is None


# Sanitizer builds (scripts/sanitize) keep shadow memory: AddressSanitizer
# about 3x, ThreadSanitizer 5-10x (measured here: 175 MiB for what is 57 MiB
# unsanitized). The bound is for the real relay; under a sanitizer it is
# scaled, never dropped.
RSS_BOUND_KIB = 160 * 1024 * {"": 1, "address": 3, "thread": 4}[os.environ.get("TOOT_RELAY_SANITIZER", "")]


def check_idle_connections(relay, cap, prepared, rss_before, idle):
    idle += open_connections(relay.port, 10000)
    time.sleep(2)
    closed = [sock for sock in idle if closed_by_peer(sock)]
    closed_set = set(closed)
    held = [sock for sock in idle if sock not in closed_set]
    rss, peak = rt.rss_kib(relay.popen.pid)
    print(f"cap {cap}: held {len(held)}, closed {len(closed)}; relay RSS {rss_before} KiB before, "
          f"{rss} KiB with the connections open, peak {peak} KiB")
    expected_held = min(cap, 10000)
    # The one push above has closed its connection; allow the relay's own
    # accounting a little slack for connections still being torn down.
    assert expected_held - 5 <= len(held) <= expected_held
    assert len(closed) == 10000 - len(held)
    assert peak <= RSS_BOUND_KIB, f"relay peak RSS {peak} KiB"
    # A held connection is a real one; a new sender beyond the cap is closed
    # cleanly (accept, close), under it it is served.
    for sock in held[:20]:
        sock.sendall(rt.health_request())
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    if cap < 10000:
        extra = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        assert closed_by_peer_within(extra, 5)
        extra.close()
    else:
        assert timed_push(relay.port, rt.plain_token(2), prepared)[0] == 201
def closed_by_peer_within(sock, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if closed_by_peer(sock):
            return True
        time.sleep(0.05)
    return False


GOOD = rt.request_bytes("POST", PATH, [("Content-Encoding", "aesgcm"), ("TTL", "60"), ("Crypto-Key", "dh=AAAA"),
                                       ("Encryption", "salt=AAAA")], b"x")

# (description, request bytes, allowed statuses). Every one must get one of
# them (never a crash, a hang or a silent close), then the relay serves others.
OVERSIZED_AND_MALFORMED = [
    ("header block of 1 MiB", b"POST " + PATH.encode() + b" HTTP/1.1\r\nX-A: " + b"a" * (1 << 20) + b"\r\n\r\n", {431}),
    ("10,000 tiny headers", b"POST " + PATH.encode() + b" HTTP/1.1\r\n" + b"a:b\r\n" * 10000 + b"\r\n", {431}),
    ("3,000 tiny headers under the byte cap", b"GET /relay-to/_health HTTP/1.1\r\n" + b"a:\r\n" * 3000 + b"\r\n",
     {200, 431}),
    ("request line of 64 KiB", b"GET /" + b"a" * 65536 + b" HTTP/1.1\r\n\r\n", {414, 431, 400}),
    ("Content-Length of 20 digits", b"POST " + PATH.encode() + b" HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
     {400, 413}),
    ("negative Content-Length", b"POST " + PATH.encode() + b" HTTP/1.1\r\nContent-Length: -1\r\n\r\n", {400}),
    ("body of 1 MiB", b"POST " + PATH.encode() + b" HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n" + b"b" * (1 << 20),
     {413}),
    ("chunk size of 20 hex digits", b"POST " + PATH.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"ffffffffffffffffffff\r\n", {400, 413}),
    ("chunk size over the body cap", b"POST " + PATH.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"7fffffff\r\n", {413}),
    ("chunk extension of 64 KiB", b"POST " + PATH.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;"
     + b"e" * 65536 + b"\r\n", {400, 413}),
    ("chunk size line without end", b"POST " + PATH.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"1" * 65536, {400, 413}),
    ("10,000 one-byte chunks", b"POST " + PATH.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"1\r\na\r\n" * 10000 + b"0\r\n\r\n", {413}),
    ("NUL in the path", b"POST /relay-to/production/" + rt.TOKEN.encode() + b"/a\x00b HTTP/1.1\r\n\r\n", {400}),
    ("NUL in a header name", b"GET /relay-to/_health HTTP/1.1\r\nX\x00Y: 1\r\n\r\n", {400}),
    ("NUL in a header value", GOOD.replace(b"TTL: 60", b"TTL: 6\x000"), {400}),
    ("invalid UTF-8 in a header name", b"GET /relay-to/_health HTTP/1.1\r\nX\xff: 1\r\n\r\n", {400}),
    ("invalid UTF-8 in TTL", GOOD.replace(b"TTL: 60", b"TTL: \xff\xfe"), {400}),
    ("invalid UTF-8 in the method", b"P\xffST " + PATH.encode() + b" HTTP/1.1\r\n\r\n", {400, 405, 501}),
    ("bare LF line ends", b"GET /relay-to/_health HTTP/1.1\nHost: x\n\n", {200, 400}),
    ("CR without LF in a header", b"GET /relay-to/_health HTTP/1.1\r\nX: a\rb\r\n\r\n", {400}),
]


# Each gets a Host header, so only the abuse under test can be refused.
OVERSIZED_AND_MALFORMED = [(description, data.replace(b" HTTP/1.1\r\n", b" HTTP/1.1\r\nHost: x\r\n", 1), allowed)
                           for description, data, allowed in OVERSIZED_AND_MALFORMED]


@pytest.mark.parametrize("description,data,allowed", OVERSIZED_AND_MALFORMED,
                         ids=[row[0] for row in OVERSIZED_AND_MALFORMED])
def test_oversized_and_malformed_requests_get_a_status(relay, description, data, allowed):
    client = rt.Client(relay.port, timeout=15)
    try:
        client.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the relay answered and closed before reading it all
    response = client.response()
    assert response.status in allowed, (description, response)
    if response.status >= 400:
        assert response.body.endswith(b"\n") and response.body.count(b"\n") == 1
    client.close()
    other = rt.Client(relay.port)
    other.send(rt.health_request())
    assert other.response().status == 200
    other.close()


# Raw (already percent-encoded where HTTP requires) extra path parts.
HOSTILE_EXTRAS = [
    "quote%22and%5Cbackslash",
    "newline%0Acarriage%0Dtab%09",
    "nul%00byte",
    "all-controls" + "".join(f"%{code:02X}" for code in range(0x20)) + "%7F",
    "invalid-utf8%FF%FE%C0%AF%ED%A0%80",
    "json%22%7D%2C%22aps%22%3A%7B%7D%7D",
    "line%0A2026-01-01T00:00:00.000Z%20error%20forged",
    "unicode%E2%80%A8%E2%80%A9%F0%9F%8E%BA",
    "sub/dirs/%2F/and'apostrophe",
]


@pytest.mark.parametrize("extra", HOSTILE_EXTRAS)
def test_hostile_extra_part_is_valid_json_and_one_log_line(spawn, extra):
    emulator = spawn.emulator("abuse-extra-emulator")
    relay = spawn.relay("abuse-extra", emulator.port, LOG_LEVEL="info")
    assert relay.log_contains("listening")
    lines_before = relay.read_log().count("\n")
    subscriber = rt.Subscriber()
    path = f"{PATH}/{extra}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"hostile extra")
    client = rt.Client(relay.port)
    client.send(rt.request_bytes("POST", path, headers, body))
    response = client.response()
    client.close()
    assert response.status == 201, response
    apns_id = response.header("Location").rsplit("/", 1)[1]
    entry = rt.recorded(emulator, apns_id)
    payload = json.loads(entry["payload"])
    # RelayCore's documented choice: percent-decoded, invalid UTF-8 → U+FFFD.
    assert payload["x"] == urllib.parse.unquote_to_bytes(extra).decode("utf-8", errors="replace")
    assert rt.decrypt_notification(payload, subscriber) == b"hostile extra"
    assert relay.log_contains(apns_id)
    time.sleep(0.2)
    log = relay.read_log()
    new_lines = log.splitlines()[lines_before:]
    assert len(new_lines) == 1, new_lines
    assert apns_id in new_lines[0] and "status=201" in new_lines[0]
    assert all(0x20 <= ord(character) != 0x7F for character in new_lines[0])
