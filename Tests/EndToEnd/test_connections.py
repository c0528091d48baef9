"""Keep-alive, pipelining and many concurrent sender connections."""

import resource
import selectors
import socket
import time

import relaytest as rt


def one_push(subscriber, index):
    path = f"/relay-to/production/{rt.TOKEN}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"message %d" % index,
                                     encoding="aes128gcm" if index % 2 else "aesgcm")
    return rt.request_bytes("POST", path, headers, body)


def test_hundred_requests_on_one_keep_alive_connection(relay):
    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    ids = set()
    for index in range(100):
        client.send(one_push(subscriber, index))
        response = client.response()
        assert response.status == 201
        assert response.header("Connection") is None
        ids.add(response.header("Location"))
    assert len(ids) == 100
    client.close()


def test_pipelined_requests_answered_in_order(relay):
    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    batch = b""
    expected = []
    for index in range(30):
        if index % 3 == 2:
            batch += rt.request_bytes("GET", "/nowhere")
            expected.append(404)
        else:
            batch += one_push(subscriber, index)
            expected.append(201)
    client.send(batch)
    assert [client.response().status for _ in expected] == expected
    client.close()


def test_thousand_concurrent_connections(spawn, emulator):
    # APNs' own answer timeout (8 s), not the module relay's short one.
    relay = spawn.relay("relay-thousand", emulator.port)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    subscriber = rt.Subscriber()
    requests = [one_push(subscriber, index) for index in range(1000)]
    before = len(rt.recorded(emulator))
    sockets = []
    try:
        for _ in range(1000):
            sock = socket.create_connection(("127.0.0.1", relay.port), timeout=10)
            sock.setblocking(False)
            sockets.append(sock)
        # All 1,000 are open at once; now every one sends its request.
        selector = selectors.DefaultSelector()
        pending = {}
        for sock, data in zip(sockets, requests):
            sock.settimeout(10)
            sock.sendall(data)
            sock.setblocking(False)
            pending[sock.fileno()] = b""
            selector.register(sock, selectors.EVENT_READ)
        statuses = {}
        deadline = time.monotonic() + 60
        while len(statuses) < len(sockets) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1):
                sock = key.fileobj
                chunk = sock.recv(4096)
                pending[sock.fileno()] += chunk
                data = pending[sock.fileno()]
                if b"\r\n\r\n" in data or not chunk:
                    statuses[sock.fileno()] = int(data.split(b" ")[1]) if data else 0
                    selector.unregister(sock)
        print(f"1,000 answers in {time.monotonic() - (deadline - 60):.2f} s")
        assert len(statuses) == 1000
        assert all(status == 201 for status in statuses.values()), \
            {status: list(statuses.values()).count(status) for status in set(statuses.values())}
    finally:
        for sock in sockets:
            sock.close()
    deadline = time.monotonic() + 10
    while len(rt.recorded(emulator)) - before < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(rt.recorded(emulator)) - before == 1000


def test_connections_beyond_the_cap_are_closed(spawn, emulator):
    relay = spawn.relay("relay-cap", emulator.port, MAX_CONNECTIONS=3, THREADS=1)
    kept = [rt.Client(relay.port) for _ in range(3)]
    for client in kept:
        client.send(rt.health_request())
        assert client.response().status == 200
    extra = rt.Client(relay.port)
    assert extra.closed_by_peer()
    kept[0].close()
    time.sleep(0.2)
    again = rt.Client(relay.port)
    again.send(rt.health_request())
    assert again.response().status == 200


def ipv6_loopback_works():
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_bind_unset_listens_on_all_interfaces_dual_stack(certs, workdir, emulator):
    env = rt.relay_environment(certs, emulator.port)
    del env["BIND"]
    relay = rt.start_relay(env, workdir, name="relay-dualstack")
    try:
        client = rt.Client(relay.port)
        client.send(rt.health_request())
        assert client.response().status == 200
        client.close()
        if ipv6_loopback_works():
            with socket.create_connection(("::1", relay.port), timeout=10) as sock:
                sock.sendall(rt.health_request())
                assert sock.recv(100).startswith(b"HTTP/1.1 200 ")
    finally:
        relay.kill()


def test_half_close_after_pipelined_requests_still_answers_each(relay):
    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    client.send(one_push(subscriber, 1) + rt.health_request() + one_push(subscriber, 2))
    client.sock.shutdown(socket.SHUT_WR)
    statuses = [client.response().status for _ in range(3)]
    assert statuses == [201, 200, 201]
    assert client.closed_by_peer()
    client.close()
