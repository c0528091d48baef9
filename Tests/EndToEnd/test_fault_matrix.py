"""The fault matrix (RELIABILITY.md §3): each fault against the emulator,
under concurrent load, checked against the ledger — every 201 was accepted
by APNs exactly once, nothing APNs did not accept got a 2xx, and no
fault produced a 4xx other than 410 for a dead token."""

import os
import re
import signal
import threading
import time

import relaytest as rt

# Emulator fault code → the relay's answer (WIRE.md §3). A 4xx only where
# APNs said this subscription can never work (410).
ERROR_ROWS = {
    0x01: 410, 0x11: 410, 0x02: 410, 0x03: 410,  # Unregistered, ExpiredToken, BadDeviceToken, NotForTopic
    0x04: 502,                                     # PayloadTooLarge (the relay sized it)
    0x05: 503,                                     # TooManyRequests (this device, transient)
    0x13: 503,                                     # TooManyProviderTokenUpdates (ours)
    0x06: 502, 0x07: 502, 0x08: 502, 0x09: 502, 0x14: 502, 0x0a: 502, 0x0b: 502,
    0x0c: 503, 0x0d: 503, 0x12: 503,               # 500, 503, 503 Shutdown
    0x0e: 504,                                     # no answer
    0x0f: 502,                                     # RST_STREAM
}


def transient_only(outcomes):
    """Statuses a transient fault may produce: 201 or 5xx."""
    return [outcome for outcome in outcomes
            if outcome.status is not None and outcome.status != 201 and not 500 <= outcome.status < 600]


def test_every_apns_error_under_load_keeps_the_ledger(spawn):
    emulator = spawn.emulator("fm-errors")
    relay = spawn.relay("fm-errors-relay", emulator.port, APNS_TIMEOUT=2)
    tokens = [rt.plain_token(index) for index in range(300)]
    for code in ERROR_ROWS:
        tokens += [rt.fault_token(code, filler=filler) for filler in range(1, 6)]
    outcomes = rt.send_all(relay.port, tokens, threads=16)
    assert len(outcomes) == len(tokens)
    for outcome in outcomes:
        if outcome.token.startswith(rt.fault_token(0)[:8]):
            code = int(outcome.token[8:10], 16)
            assert outcome.status == ERROR_ROWS[code], (hex(code), outcome)
        else:
            assert outcome.status == 201, outcome
    summary = rt.check_ledger(outcomes, rt.recorded(emulator), allowed_4xx=(410,))
    assert summary["201"] == 300


def test_apns_dropping_connections_mid_stream(spawn):
    # Every APNs connection dies, unanswered, at its 25th request, with
    # requests of other senders in flight on it; and 10 drop-fault tokens.
    emulator = spawn.emulator("fm-drop", "--drop-after", "25", "--delay-ms", "5")
    relay = spawn.relay("fm-drop-relay", emulator.port, APNS_TIMEOUT=3)
    tokens = [rt.plain_token(index) for index in range(600)]
    tokens += [rt.fault_token(0x10, filler=filler) for filler in range(1, 11)]
    outcomes = rt.send_all(relay.port, tokens, threads=16)
    assert len(outcomes) == len(tokens)
    assert not transient_only(outcomes), transient_only(outcomes)[:5]
    assert all(outcome.status is not None for outcome in outcomes)
    # A dropped request may have been accepted by APNs before the drop: the
    # sender got a 5xx and retries (at least once, never lost).
    summary = rt.check_ledger(outcomes, rt.recorded(emulator), exact=False)
    stats = rt.stop_emulator_and_read_stats(emulator)
    assert rt.stat_value(stats, "dropped connections") >= 10
    assert summary["201"] >= 300, summary


def test_goaway_under_load_loses_nothing(spawn):
    # GOAWAY after every 20th stream: requests past last-stream-id are
    # refused (REFUSED_STREAM, RFC 9113 §8.7) and must be resent elsewhere.
    emulator = spawn.emulator("fm-goaway", "--goaway-after", "20", "--delay-ms", "5")
    relay = spawn.relay("fm-goaway-relay", emulator.port, APNS_TIMEOUT=3)
    tokens = [rt.plain_token(index) for index in range(800)]
    outcomes = rt.send_all(relay.port, tokens, threads=32)
    assert len(outcomes) == len(tokens)
    assert rt.status_histogram(outcomes) == {201: 800}
    rt.check_ledger(outcomes, rt.recorded(emulator))
    stats = rt.stop_emulator_and_read_stats(emulator)
    assert rt.stat_value(stats, "connections") >= 800 // 20


def test_apns_unreachable_then_back(spawn):
    port = rt.free_port()
    relay = spawn.relay("fm-unreachable-relay", port, APNS_CONNECT_TIMEOUT=1, APNS_TIMEOUT=2, METRICS_PORT=0)
    down = rt.send_all(relay.port, [rt.plain_token(index) for index in range(20)], threads=4)
    assert {outcome.status for outcome in down} <= {502, 503}, rt.status_histogram(down)
    # The operator hears of it in a warning line per tick, with the
    # system's words, and the metrics count the failed attempts.
    assert relay.log_contains("warning APNs: ", timeout=5), relay.read_log()[-2000:]
    line = next(line for line in relay.read_log().splitlines() if "warning APNs: " in line)
    assert re.search(r"APNs: \d+ connection attempts? failed: ", line), line
    assert "refused" in line.lower(), line
    text = rt.scrape(rt.metrics_port(relay))
    failed = rt.metric_value(text, 'toot_relay_apns_connection_events_total{event="connect_failed"}')
    assert failed >= 1
    assert rt.metric_value(text, 'toot_relay_apns_connection_events_total{event="attempted"}') >= failed
    emulator = spawn.emulator("fm-unreachable", "--port", str(port))
    # Each loop thread's pool backs off while down (at most 15 s plus
    # jitter, answering 503 + Retry-After meanwhile); the first request after
    # its backoff reconnects. Bounded: until a whole batch is 201.
    deadline = time.monotonic() + 40
    back = []
    index = 1000
    while time.monotonic() < deadline:
        batch = rt.send_all(relay.port, [rt.plain_token(index + offset) for offset in range(16)], threads=8)
        index += 16
        back += batch
        if all(outcome.status == 201 for outcome in batch):
            break
        time.sleep(0.5)
    assert all(outcome.status == 201 for outcome in back[-16:]), rt.status_histogram(back)
    after = rt.send_all(relay.port, [rt.plain_token(index) for index in range(2000, 2200)], threads=8)
    assert rt.status_histogram(after) == {201: 200}
    # The gauges follow within a tick.
    ready_by = time.monotonic() + 5
    while rt.metric_value(rt.scrape(rt.metrics_port(relay)), 'toot_relay_apns_connections{state="ready"}') < 1:
        assert time.monotonic() < ready_by, "no ready APNs connection in the metrics"
        time.sleep(0.2)
    all_outcomes = down + back + after
    assert not transient_only(all_outcomes)
    rt.check_ledger(all_outcomes, rt.recorded(emulator))


def test_apns_slower_than_the_answer_timeout(spawn):
    emulator = spawn.emulator("fm-slow", "--delay-ms", "2500")
    relay = spawn.relay("fm-slow-relay", emulator.port, APNS_TIMEOUT=1)
    outcomes = rt.send_all(relay.port, [rt.plain_token(index) for index in range(64)], threads=16)
    assert rt.status_histogram(outcomes) == {504: 64}
    # Answered at the timeout, well before Mastodon's 10 s.
    assert max(outcome.elapsed for outcome in outcomes) < 2.5
    # APNs accepted them after the relay gave up: the sender retries (at
    # least once); no 2xx for anything.
    rt.check_ledger(outcomes, rt.recorded(emulator, timeout=0), exact=False)


def test_tls_handshake_failure(spawn, certs):
    # The emulator presents a certificate from a CA the relay does not trust.
    emulator = spawn.emulator("fm-tls", "--certificate", os.path.join(certs, "other-server.pem"),
                              "--key", os.path.join(certs, "other-server.key"))
    relay = spawn.relay("fm-tls-relay", emulator.port, APNS_CONNECT_TIMEOUT=1, APNS_TIMEOUT=2)
    outcomes = rt.send_all(relay.port, [rt.plain_token(index) for index in range(40)], threads=8)
    assert set(rt.status_histogram(outcomes)) <= {502, 503}, rt.status_histogram(outcomes)
    rt.check_ledger(outcomes, rt.recorded(emulator, timeout=0))
    assert rt.recorded(emulator, timeout=0) == []


def test_client_certificate_rejected(spawn, certs):
    # The emulator requires client certificates from the other CA.
    emulator = spawn.emulator("fm-client-cert", "--client-ca", os.path.join(certs, "other-ca.pem"))
    relay = spawn.relay("fm-client-cert-relay", emulator.port, APNS_CONNECT_TIMEOUT=1, APNS_TIMEOUT=2)
    outcomes = rt.send_all(relay.port, [rt.plain_token(index) for index in range(40)], threads=8)
    assert set(rt.status_histogram(outcomes)) <= {502, 503}, rt.status_histogram(outcomes)
    rt.check_ledger(outcomes, rt.recorded(emulator, timeout=0))
    assert rt.recorded(emulator, timeout=0) == []
    stats = rt.stop_emulator_and_read_stats(emulator)
    assert rt.stat_value(stats, "handshake failures") >= 1


def test_sigterm_under_load(spawn):
    emulator = spawn.emulator("fm-sigterm", "--delay-ms", "100")
    relay = spawn.relay("fm-sigterm-relay", emulator.port, SHUTDOWN_GRACE=10, APNS_TIMEOUT=3)
    results = []
    done = threading.Event()

    def load():
        results.extend(rt.send_all(relay.port, [rt.plain_token(index) for index in range(100_000)], threads=32,
                                   deadline_seconds=12, timeout=12))
        done.set()

    loader = threading.Thread(target=load)
    loader.start()
    time.sleep(1.5)
    started = time.monotonic()
    relay.signal(signal.SIGTERM)
    assert relay.wait(timeout=15) == 0
    assert time.monotonic() - started < 10
    loader.join(timeout=30)
    assert done.is_set()
    answered = [outcome for outcome in results if outcome.status is not None]
    assert len(answered) >= 100
    # Every request the relay read got its real answer (the in-flight ones
    # included); later ones found the connection closed or refused.
    assert {outcome.status for outcome in answered} == {201}, rt.status_histogram(results)
    rt.check_ledger(results, rt.recorded(emulator))
