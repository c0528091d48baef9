"""HTTP/2 on the provider API's port, driven by the `h2` library (a client
not written here): gorush's /api/push, /healthz, Apple's /3/device and
pyapns' XML-RPC answer over h2c with prior knowledge and over TLS (ALPN h2,
no ALPN with the preface; http/1.1 still served), SIGHUP reloads the API's
certificate, SIGTERM sends GOAWAY once the request in flight is answered,
and hostile peers (rapid reset, a header list over the limit, a
CONTINUATION flood, an oversized frame, bad HPACK, a peer that never reads)
get GOAWAY or RST_STREAM, while the relay serves on with bounded memory."""

import json
import os
import shutil
import signal
import socket
import ssl
import struct
import time
import xmlrpc.client

import hpack
import pytest

import providerapi as api
import relaytest as rt
from h2client import H2Client

KEY = api.ALL_APPS_KEY
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal_block(fields):
    """Literal header fields without indexing, no Huffman (RFC 7541 §6.2.2); lengths below 127."""
    out = b""
    for name, value in fields:
        out += b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()
    return out


REQUEST_BLOCK = literal_block([(":method", "GET"), (":scheme", "http"), (":path", "/healthz"),
                               (":authority", "relay.test")])


def read_frames(sock):
    """Every frame until the relay closes: (type, flags, stream, payload)."""
    buffer, frames = b"", []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            break
        buffer += chunk
        while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
            length = int.from_bytes(buffer[:3], "big")
            frames.append((buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF,
                           buffer[9:9 + length]))
            buffer = buffer[9 + length:]
    return frames


def raw_goaway(port, data, timeout=10):
    """Sends `data` after the preface and an empty SETTINGS; returns the
    GOAWAY error code the relay answers with (None: closed without one)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            sock.sendall(PREFACE + frame(0x4, 0, 0) + data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        goaways = [payload for kind, _, _, payload in read_frames(sock) if kind == 0x7]
        return int.from_bytes(goaways[0][4:8], "big") if goaways else None
    finally:
        sock.close()


def push_body(token):
    return json.dumps({"notifications": [{"tokens": [token], "platform": 1, "message": "over h2"}]}).encode()


def bearer():
    return [("authorization", f"Bearer {KEY}")]


def check_every_route(client, stack):
    """gorush, /healthz, Apple's request and pyapns over one connection."""
    health = client.call("GET", "/healthz")
    assert health["status"] == 200, health
    token = api.fresh_token()
    pushed = client.call("POST", "/api/push", bearer() + [("content-type", "application/json")], push_body(token))
    assert pushed["status"] == 200, pushed
    assert json.loads(pushed["body"])["success"] == "ok"
    assert len(api.received_for(stack["production"], token)) == 1
    token = api.fresh_token()
    device = client.call("POST", f"/3/device/{token}", bearer() + [("apns-topic", rt.TOPIC)],
                         b'{"aps":{"alert":"direct"}}')
    assert device["status"] == 200, device
    assert device["headers"].get("apns-id")
    assert "connection" not in device["headers"]
    assert len(api.received_for(stack["production"], token)) == 1
    basic = [("authorization", api.basic(KEY, "")[0][1])]
    app = f"h2-app-{api.fresh_token()[-8:]}"
    provision = xmlrpc.client.dumps((app, stack["certificate"], "production", 15), methodname="provision").encode()
    provisioned = client.call("POST", "/", basic + [("content-type", "text/xml")], provision)
    assert provisioned["status"] == 200, provisioned
    assert xmlrpc.client.loads(provisioned["body"])[0] == (None,)
    token = api.fresh_token()
    notify = xmlrpc.client.dumps((app, token, {"aps": {"alert": "pyapns"}}), methodname="notify",
                                 allow_none=True).encode()
    notified = client.call("POST", "/", basic + [("content-type", "text/xml")], notify)
    assert notified["status"] == 200, notified
    assert xmlrpc.client.loads(notified["body"])[0] == (None,)
    assert len(api.received_for(stack["production"], token)) == 1


@pytest.fixture(scope="module")
def stack(certs, workdir, tmp_path_factory):
    """An emulator (answers after 400 ms for the SIGTERM test's own relay);
    a relay whose API port speaks TLS with the test server certificate
    (copied, for SIGHUP) and asks for client certificates; and a cleartext one."""
    directory = str(tmp_path_factory.mktemp("api-h2"))
    crt, key = os.path.join(directory, "api.pem"), os.path.join(directory, "api.key")
    shutil.copy(os.path.join(certs, "server.pem"), crt)
    shutil.copy(os.path.join(certs, "server.key"), key)
    production = rt.start_emulator(certs, workdir, name="api-h2-production")
    plain = rt.start_relay(rt.relay_environment(certs, production.port, APNS_TIMEOUT=3, API_PORT=0, API_KEYS=KEY),
                           workdir, name="api-h2-plain")
    tls = rt.start_relay(rt.relay_environment(certs, production.port, APNS_TIMEOUT=3, API_PORT=0, API_KEYS=KEY,
                                              API_CRT_FILENAME=crt, API_KEY_FILENAME=key,
                                              API_CLIENT_CA_FILENAME=os.path.join(certs, "ca.pem")),
                         workdir, name="api-h2-tls")
    processes = (plain, tls, production)
    try:
        plain_port, tls_port = api.api_port(plain), api.api_port(tls)
    except AssertionError:
        for process in processes:
            process.kill()
        raise
    with open(os.path.join(certs, "client.pem")) as pem, open(os.path.join(certs, "client.key")) as private:
        certificate = pem.read() + private.read()
    yield {"plain": plain, "plain_port": plain_port, "tls": tls, "tls_port": tls_port, "production": production,
           "certificate": certificate, "crt": crt, "key": key, "ca": os.path.join(certs, "ca.pem"), "certs": certs}
    for process in processes:
        process.kill()


def test_every_route_over_h2c_with_prior_knowledge(stack):
    client = H2Client(stack["plain_port"])
    try:
        check_every_route(client, stack)
        assert client.conn.remote_settings.max_concurrent_streams == 100
    finally:
        client.close()


def test_every_route_over_tls_with_alpn_h2(stack):
    client = H2Client(stack["tls_port"], tls_ca=stack["ca"])
    try:
        assert client.sock.selected_alpn_protocol() == "h2"
        check_every_route(client, stack)
    finally:
        client.close()


def test_tls_without_alpn_serves_http2_after_the_preface(stack):
    client = H2Client(stack["tls_port"], tls_ca=stack["ca"], alpn=None)
    try:
        assert client.sock.selected_alpn_protocol() is None
        assert client.call("GET", "/healthz")["status"] == 200
    finally:
        client.close()


@pytest.mark.parametrize("alpn", [("http/1.1",), None])
def test_tls_serves_http1_by_alpn_or_without_the_preface(stack, alpn):
    context = ssl.create_default_context(cafile=stack["ca"])
    if alpn:
        context.set_alpn_protocols(list(alpn))
    with context.wrap_socket(socket.create_connection(("127.0.0.1", stack["tls_port"]), timeout=10),
                             server_hostname="localhost") as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: relay.test\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")


def test_a_client_certificate_issued_by_the_ca_is_taken_one_from_another_ca_is_refused(stack):
    certs = stack["certs"]
    client = H2Client(stack["tls_port"], tls_ca=stack["ca"],
                      client_cert=(os.path.join(certs, "client.pem"), os.path.join(certs, "client.key")))
    try:
        assert client.call("GET", "/healthz")["status"] == 200
    finally:
        client.close()
    # TLS 1.3: the server's refusal (an alert, then the close) arrives
    # with the client's first read, after its handshake seemed complete.
    try:
        other = H2Client(stack["tls_port"], tls_ca=stack["ca"],
                         client_cert=(os.path.join(certs, "other-client.pem"), os.path.join(certs, "other-client.key")))
        stream = other.request("GET", "/healthz")
        answered = other.pump(lambda: stream in other.ended)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        answered = False
    assert not answered


def test_cleartext_http1_is_still_served(stack):
    response = api.request(stack["plain_port"], "GET", "/healthz")
    assert response.status == 200


def test_sighup_reloads_the_api_certificate(stack):
    certs = stack["certs"]
    shutil.copy(os.path.join(certs, "other-server.pem"), stack["crt"])
    shutil.copy(os.path.join(certs, "other-server.key"), stack["key"])
    try:
        stack["tls"].signal(signal.SIGHUP)
        assert stack["tls"].log_contains("SIGHUP: API_CRT_FILENAME/API_KEY_FILENAME")
        client = H2Client(stack["tls_port"], tls_ca=os.path.join(certs, "other-ca.pem"))
        try:
            assert client.call("GET", "/healthz")["status"] == 200
        finally:
            client.close()
    finally:
        shutil.copy(os.path.join(certs, "server.pem"), stack["crt"])
        shutil.copy(os.path.join(certs, "server.key"), stack["key"])
        stack["tls"].signal(signal.SIGHUP)
        time.sleep(0.5)


# MARK: hostile peers; each test ends with the relay serving h2 on.

def serves_on(stack):
    client = H2Client(stack["plain_port"])
    try:
        return client.call("GET", "/healthz")["status"] == 200
    finally:
        client.close()


def test_rapid_reset_gets_goaway_enhance_your_calm(stack):
    data = b""
    for index in range(500):
        stream = 2 * index + 1
        data += frame(0x1, 0x5, stream, REQUEST_BLOCK) + frame(0x3, 0, stream, struct.pack(">I", 8))
    assert raw_goaway(stack["plain_port"], data) == 0xB
    assert serves_on(stack)


@pytest.mark.parametrize("what, data, code", [
    ("bad HPACK", frame(0x1, 0x4, 1, b"\xff\xff\xff\x7f"), 0x9),
    ("an oversized frame", frame(0x0, 0, 1, bytes(20_000)), 0x6),
    ("DATA on stream 0", frame(0x0, 0, 0, b"abc"), 0x1),
])
def test_a_broken_frame_gets_goaway_with_its_error(stack, what, data, code):
    assert raw_goaway(stack["plain_port"], data) == code, what
    assert serves_on(stack)


def test_a_header_list_over_max_header_bytes_resets_its_stream_and_the_connection_serves_on(stack):
    client = H2Client(stack["plain_port"])
    try:
        flood = [(f"x-flood-{index}", "f" * 100) for index in range(200)]  # about 23 KiB, over 16 KiB
        stream = client.request("GET", "/healthz", flood)
        assert client.pump(lambda: stream in client.resets or stream in client.ended)
        assert stream in client.resets and stream not in client.responses
        assert client.call("GET", "/healthz")["status"] == 200
    finally:
        client.close()


def test_a_continuation_flood_is_dropped_without_growing(stack):
    filler = literal_block([("x-filler", "b" * 100)])
    data = frame(0x1, 0, 1, REQUEST_BLOCK) + b"".join(frame(0x9, 0, 1, filler) for _ in range(5000))
    before = time.monotonic()
    raw_goaway(stack["plain_port"], data)  # closed, with or without GOAWAY
    assert time.monotonic() - before < 8
    assert serves_on(stack)
    api.assert_bounded_memory(stack["plain"])


def test_a_peer_that_never_reads_is_closed_with_memory_bounded(stack):
    sockets = []
    path = "/healthz?" + "p" * 100
    block = literal_block([(":method", "GET"), (":scheme", "http"), (":path", path), (":authority", "r")])
    requests = b"".join(frame(0x1, 0x5, 2 * index + 1, block) for index in range(100))
    for _ in range(20):
        sock = socket.create_connection(("127.0.0.1", stack["plain_port"]), timeout=2)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        try:
            sock.sendall(PREFACE + frame(0x4, 0, 0) + frame(0x8, 0, 0, struct.pack(">I", 1 << 30)) + requests)
        except (socket.timeout, BrokenPipeError, ConnectionResetError):
            pass
        sockets.append(sock)
    assert serves_on(stack)
    api.assert_bounded_memory(stack["plain"])
    for sock in sockets:
        sock.close()


def test_sigterm_sends_goaway_and_answers_the_request_in_flight(certs, workdir):
    """Raw frames: h2 (the library) stops reading at a GOAWAY, which RFC
    9113 §6.8 does not ask of a client; the answer comes after it."""
    emulator = rt.start_emulator(certs, workdir, name="api-h2-slow", extra=("--delay-ms", "800"))
    relay = rt.start_relay(rt.relay_environment(certs, emulator.port, APNS_TIMEOUT=5, API_PORT=0, API_KEYS=KEY,
                                                SHUTDOWN_GRACE=10), workdir, name="api-h2-sigterm")
    try:
        port = api.api_port(relay)
        token = api.fresh_token()
        body = b'{"aps":{"alert":"in flight"}}'
        block = literal_block([(":method", "POST"), (":scheme", "http"), (":path", f"/3/device/{token}"),
                               (":authority", "relay.test"), ("authorization", f"Bearer {KEY}"),
                               ("apns-topic", rt.TOPIC), ("content-length", str(len(body)))])
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(PREFACE + frame(0x4, 0, 0) + frame(0x1, 0x4, 1, block) + frame(0x0, 0x1, 1, body))
        time.sleep(0.3)  # at the emulator, which answers after 800 ms
        relay.signal(signal.SIGTERM)
        frames = read_frames(sock)
        sock.close()
        kinds = [(kind, stream) for kind, _, stream, _ in frames]
        goaway = kinds.index((0x7, 0))
        payload = frames[goaway][3]
        assert int.from_bytes(payload[4:8], "big") == 0  # NO_ERROR
        assert int.from_bytes(payload[0:4], "big") == 1  # stream 1 is answered
        answer = kinds.index((0x1, 1))
        assert answer > goaway
        decoder = hpack.Decoder()
        for kind, _, _, payload in frames[:answer]:
            if kind == 0x1:
                decoder.decode(payload)
        assert dict(decoder.decode(frames[answer][3]))[":status"] == "200"
        assert len(api.received_for(emulator, token)) == 1
        assert relay.wait(15) == 0
    finally:
        relay.kill()
        emulator.kill()
