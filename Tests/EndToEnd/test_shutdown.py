"""SIGTERM/SIGINT with requests in flight; startup failures; --help."""

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

import relaytest as rt


def push_in_thread(port, results, index):
    subscriber = rt.Subscriber()
    path = f"/relay-to/production/{rt.TOKEN}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"in flight %d" % index)
    try:
        client = rt.Client(port, timeout=20)
        client.send(rt.request_bytes("POST", path, headers, body))
        response = client.response()
        results[index] = (response.status, response.header("Connection"))
        client.close()
    except Exception as error:  # noqa: BLE001 - recorded for the assertion
        results[index] = ("error", repr(error))


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT])
def test_signal_with_requests_in_flight_gives_each_its_real_answer(spawn, signal_number):
    slow = spawn.emulator(f"emulator-slow-{signal_number}", "--delay-ms", "1500")
    relay = spawn.relay(f"relay-shutdown-{signal_number}", slow.port, SHUTDOWN_GRACE=10)
    idle = rt.Client(relay.port)
    idle.send(rt.health_request())
    assert idle.response().status == 200
    results = {}
    threads = [threading.Thread(target=push_in_thread, args=(relay.port, results, index)) for index in range(20)]
    for thread in threads:
        thread.start()
    # Wait until the emulator holds them (it answers only after 1.5 s).
    time.sleep(0.7)
    started = time.monotonic()
    relay.signal(signal_number)
    assert relay.wait(timeout=15) == 0
    for thread in threads:
        thread.join(timeout=15)
    assert len(results) == 20
    assert all(result == (201, "close") for result in results.values()), results
    assert time.monotonic() - started < 10
    assert idle.closed_by_peer()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", relay.port), timeout=2)
    accepted = rt.recorded(slow)
    assert len(accepted) == 20
    log = relay.read_log()
    assert "stopping" in log


def run_relay(env, *args):
    return subprocess.run([rt.RELAY, *args], env=env, capture_output=True, timeout=30)


@pytest.mark.parametrize("overrides,needle", [
    ({"PORT": "99999"}, "PORT"),
    ({"PORT": "http"}, "PORT"),
    ({"P12_FILENAME": "/nonexistent/relay.p12"}, "/nonexistent/relay.p12"),
    ({"P12_PASSWORD": "wrong"}, "P12"),
    ({"P12_BASE64": "%%%"}, "P12_BASE64"),
    ({"LOG_LEVEL": "loud"}, "LOG_LEVEL"),
    ({"TOKEN_KEY_ID": "ABC"}, "TOKEN"),
    ({"APNS_PRODUCTION_HOST": "bad host/"}, "APNS_PRODUCTION_HOST"),
    ({"BIND": "256.1.1.1"}, "256.1.1.1"),
    ({"CRT_FILENAME": "EXISTING", "KEY_FILENAME": "/nonexistent.key"}, "KEY_FILENAME"),
    ({"REUSE_PORT": "maybe"}, "REUSE_PORT"),
    ({"THREADS": "0"}, "THREADS"),
    ({"SHUTDOWN_GRACE": "-1"}, "SHUTDOWN_GRACE"),
])
def test_startup_errors_are_one_line_and_exit_1(certs, overrides, needle):
    env = rt.relay_environment(certs, 1)
    if overrides.get("CRT_FILENAME") == "EXISTING":
        overrides = dict(overrides, CRT_FILENAME=os.path.join(certs, "server.pem"))
    env.update(overrides)
    result = run_relay(env)
    assert result.returncode == 1, result
    # Info lines may come first (credentials load before the listener binds);
    # the failure itself is one line, the last.
    lines = result.stderr.decode().strip().splitlines()
    failures = [line for line in lines if line.startswith("toot-relay: ")]
    assert len(failures) == 1 and lines[-1] == failures[0], lines
    assert needle in failures[0]
    assert not any(" error " in line or " warning " in line for line in lines[:-1]), lines
    assert result.stdout == b""


def test_expired_certificate_is_refused(certs):
    env = rt.relay_environment(certs, 1, P12_FILENAME=os.path.join(certs, "expired-client.p12"))
    result = run_relay(env)
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toot-relay: "), lines


def test_port_in_use_is_one_line(certs):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        env = rt.relay_environment(certs, 1, PORT=holder.getsockname()[1])
        result = run_relay(env)
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert lines[-1].startswith("toot-relay: ") and "listen" in lines[-1]


@pytest.mark.parametrize("reuse_port", ["1", "0"])
def test_one_socket_per_thread_or_one_shared(spawn, emulator, reuse_port):
    relay = spawn.relay(f"relay-reuse-{reuse_port}", emulator.port, THREADS=2, REUSE_PORT=reuse_port)
    clients = [rt.Client(relay.port) for _ in range(20)]
    for client in clients:
        client.send(rt.health_request())
    assert all(client.response().status == 200 for client in clients)
    assert relay.log_contains(f"SO_REUSEPORT {'on' if reuse_port == '1' else 'off'}")


def test_second_signal_skips_the_grace_period(spawn):
    stuck = spawn.emulator("emulator-stuck", "--delay-ms", "20000")
    relay = spawn.relay("relay-second-signal", stuck.port, SHUTDOWN_GRACE=30, APNS_TIMEOUT=25)
    results = {}
    thread = threading.Thread(target=push_in_thread, args=(relay.port, results, 0))
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    relay.signal(signal.SIGTERM)
    time.sleep(0.3)
    assert relay.popen.poll() is None  # still in its grace period
    relay.signal(signal.SIGTERM)
    assert relay.wait(timeout=10) == 0
    assert time.monotonic() - started < 5
    thread.join(timeout=10)
    assert "again" in relay.read_log()


def test_flags_override_the_environment(certs, spawn, emulator):
    relay = spawn.relay("relay-flags", emulator.port, args=("--max-connections", "1", "--threads", "1"),
                        MAX_CONNECTIONS=100)
    first = rt.Client(relay.port)
    first.send(rt.health_request())
    assert first.response().status == 200
    assert rt.Client(relay.port).closed_by_peer()


def test_help_lists_every_variable_with_its_default():
    result = subprocess.run([rt.RELAY, "--help"], capture_output=True, timeout=30)
    assert result.returncode == 0
    text = " ".join(result.stdout.decode().split())
    for name, default in [("PORT", "42069"), ("P12_FILENAME", "toot-relay.p12"), ("TOPIC", "cx.c3.toot"),
                          ("CRT_FILENAME", "toot-relay.crt"), ("APNS_PRODUCTION_HOST", "api.push.apple.com:443"),
                          ("SHUTDOWN_GRACE", "10"), ("LOG_LEVEL", "info"), ("MAX_IN_FLIGHT", "20000")]:
        assert f"env {name}" in text
        flag = "--" + name.lower().replace("_", "-")
        assert flag in text
        assert default in text


def test_https_when_the_certificate_file_exists(certs, spawn, emulator):
    relay = spawn.relay("relay-https", emulator.port, CRT_FILENAME=os.path.join(certs, "server.pem"),
                        KEY_FILENAME=os.path.join(certs, "server.key"))
    result = subprocess.run(["curl", "-sS", "--max-time", "10", "--cacert", os.path.join(certs, "ca.pem"),
                             f"https://127.0.0.1:{relay.port}/relay-to/_health"], capture_output=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"OK"
