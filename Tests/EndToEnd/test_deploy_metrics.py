"""Observability: Prometheus metrics on their own loopback listener, and the
certificate expiry warning in the log."""

import os
import re
import socket
import subprocess
import threading
import time

import providerapi
import relaytest as rt


def test_metrics_count_what_happened(spawn, emulator):
    relay = spawn.relay("relay-metrics", emulator.port, METRICS_PORT=0)
    port = rt.metrics_port(relay)
    before = rt.scrape(port)
    assert rt.metric_value(before, 'toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""}') == 0
    assert rt.metric_value(before, 'toot_relay_credential_expiry_timestamp_seconds{app="default",environment="production"}') > time.time()
    assert rt.metric_value(before, "toot_relay_max_in_flight") == 20000
    assert rt.metric_value(before, "toot_relay_apns_queued") == 0
    # Without API_PORT there is no provider API to count.
    assert "toot_relay_api_notifications_in_flight" not in before

    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    for environment in ("production", "production", "development"):
        path = f"/relay-to/{environment}/{rt.TOKEN}"
        body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"hello")
        client.send(rt.request_bytes("POST", path, headers, body))
        assert client.response().status == 201
    gone = f"/relay-to/production/{rt.fault_token(0x01)}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + gone, b"hello")
    client.send(rt.request_bytes("POST", gone, headers, body))
    assert client.response().status == 410
    client.send(rt.request_bytes("POST", f"/relay-to/development/{rt.TOKEN}", [("TTL", "60")], b"x"))
    assert client.response().status == 415

    text = rt.scrape(port)
    assert rt.metric_value(text, 'toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""}') == 2
    assert rt.metric_value(text, 'toot_relay_notifications_total{app="default",service="apns",environment="development",status="201",reason=""}') == 1
    assert rt.metric_value(text, 'toot_relay_notifications_total{app="default",service="apns",environment="production",status="410",reason="Unregistered"}') == 1
    assert rt.metric_value(text, 'toot_relay_notifications_total{app="default",service="apns",environment="development",status="415",reason="invalid_request"}') == 1
    assert rt.metric_value(text, 'toot_relay_apns_latency_seconds_count{environment="production"}') == 3
    assert rt.metric_value(text, 'toot_relay_apns_latency_seconds_count{environment="development"}') == 1
    assert rt.metric_value(text, "toot_relay_sender_connections") == 1
    assert rt.metric_value(text, "toot_relay_requests_in_flight") == 0
    assert rt.metric_value(text, 'toot_relay_apns_credentials_rejected{app="default"}') == 0
    client.close()
    # The APNs connection gauges are refreshed once a second.
    deadline = time.monotonic() + 5
    while rt.metric_value(rt.scrape(port), 'toot_relay_apns_connections{state="ready"}') in (None, 0):
        assert time.monotonic() < deadline, rt.scrape(port)
        time.sleep(0.2)


def test_fcm_counts_in_the_same_series_under_its_service(spawn, certs, tmp_path):
    """A default app with APNs and FCM credentials: each service's series,
    `service="apns"` or `"fcm"` (FCM without an environment), from the
    start; a request line of each names its service."""
    port = rt.free_port()
    account = rt.write_service_account(str(tmp_path / "service-account.json"), certs, port)
    emulator = spawn.emulator("emulator-fcm-metrics", "--port", str(port), "--fcm-record",
                              str(tmp_path / "fcm.jsonl"), "--fcm-service-account", account)
    relay = spawn.relay("relay-fcm-metrics", emulator.port, METRICS_PORT=0, FCM_CREDENTIALS_FILE=account,
                        FCM_HOST=f"127.0.0.1:{port}")
    metrics = rt.metrics_port(relay)
    before = rt.scrape(metrics)
    assert rt.metric_value(before, 'toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""}') == 0
    assert rt.metric_value(before, 'toot_relay_notifications_total{app="default",service="fcm",environment="",status="201",reason=""}') == 0
    assert rt.metric_value(before, 'toot_relay_fcm_credentials_rejected{app="default"}') == 0
    assert rt.metric_value(before, 'toot_relay_apns_credentials_rejected{app="default"}') == 0
    assert "fcm_notifications_total" not in before

    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    # A token FCM could never take: 400 before FCM is asked, counted
    # under app "-" (the URL's app is not looked up for it).
    for path, status in (("/relay-to/fcm/not.a.token", 400), (f"/relay-to/production/{rt.TOKEN}", 201)):
        body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"hello")
        client.send(rt.request_bytes("POST", path, headers, body))
        assert client.response().status == status, path
    client.close()

    text = rt.scrape(metrics)
    assert rt.metric_value(text, 'toot_relay_notifications_total{app="-",service="fcm",environment="",status="400",reason="invalid_request"}') == 1
    assert rt.metric_value(text, 'toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""}') == 1
    assert relay.log_contains("relay app=- service=fcm token=- status=400 fcm=-")
    assert relay.log_contains(f"relay app=default service=apns env=production token={rt.TOKEN[:8]} status=201 apns=200")


class SilentAPNs:
    """A TCP listener on 127.0.0.1 that accepts and never says a word: a
    connection to it stays in its TLS handshake until APNS_CONNECT_TIMEOUT."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self):
        self.listener.close()
        for connection in self.accepted:
            connection.close()


def test_notifications_waiting_for_an_apns_connection_show_against_the_cap(spawn, certs):
    silent = SilentAPNs()
    try:
        relay = spawn.relay("relay-waiting", silent.port, METRICS_PORT=0, API_PORT=0, MAX_IN_FLIGHT=50,
                            APNS_CONNECT_TIMEOUT=6)
        api_port = providerapi.api_port(relay)
        port = rt.metrics_port(relay)
        fresh = rt.scrape(port)
        assert rt.metric_value(fresh, "toot_relay_max_in_flight") == 50
        assert rt.metric_value(fresh, "toot_relay_api_notifications_in_flight") == 0

        answers = {}
        path = f"/relay-to/production/{rt.TOKEN}"
        body, headers = rt.mastodon_push(rt.Subscriber(), "https://relay.test" + path, b"waits")

        def web_push():
            client = rt.Client(relay.port, timeout=20)
            client.send(rt.request_bytes("POST", path, headers, body))
            answers["web push"] = client.response().status
            client.close()

        def provider_push():
            document = {"notifications": [{"tokens": [rt.plain_token(0x5100)], "platform": 1, "message": "waits"}]}
            answers["provider"] = providerapi.push(api_port, document, headers=[], timeout=20).status

        senders = [threading.Thread(target=web_push), threading.Thread(target=provider_push)]
        for sender in senders:
            sender.start()
        # Both wait for the one connection, which never gets past its
        # handshake; the gauges are refreshed once a second.
        wanted = {"toot_relay_requests_in_flight": 1, "toot_relay_api_notifications_in_flight": 1,
                  "toot_relay_apns_queued": 2, 'toot_relay_apns_connections{state="ready"}': 0}
        deadline = time.monotonic() + 4
        while True:
            text = rt.scrape(port)
            seen = {series: rt.metric_value(text, series) for series in wanted}
            if seen == wanted:
                break
            assert time.monotonic() < deadline, seen
            time.sleep(0.1)
        assert rt.metric_value(text, 'toot_relay_apns_connections{state="handshaking"}') >= 1, text
        for sender in senders:
            sender.join(timeout=20)
        # The handshake timed out: the sender hears a 5xx, never a 4xx.
        assert answers.get("web push") == 502, answers
        assert answers.get("provider") == 200, answers
        deadline = time.monotonic() + 3
        while rt.metric_value(rt.scrape(port), "toot_relay_apns_queued") != 0:
            assert time.monotonic() < deadline, rt.scrape(port)
            time.sleep(0.1)
        text = rt.scrape(port)
        assert rt.metric_value(text, "toot_relay_requests_in_flight") == 0
        assert rt.metric_value(text, "toot_relay_api_notifications_in_flight") == 0
    finally:
        silent.close()


def test_with_a_hook_its_post_counts_show_at_zero_before_any_post(spawn, emulator):
    relay = spawn.relay("relay-hook-zero", emulator.port, METRICS_PORT=0, API_PORT=0,
                        FEEDBACK_HOOK_URL=f"http://127.0.0.1:{rt.free_port()}/feedback")
    port = rt.metrics_port(relay)
    series = [f'toot_relay_feedback_hook_posts_total{{result="{result}"}}'
              for result in ("delivered", "retried", "failed", "dropped")]
    # Published by the once-a-second tick.
    deadline = time.monotonic() + 5
    while True:
        text = rt.scrape(port)
        seen = [rt.metric_value(text, name) for name in series]
        if seen == [0, 0, 0, 0]:
            break
        assert time.monotonic() < deadline, seen
        time.sleep(0.2)


def test_metrics_are_off_by_default_and_apart_from_the_relay(relay):
    assert "metrics on" not in relay.read_log()
    client = rt.Client(relay.port)
    client.send(rt.request_bytes("GET", "/metrics"))
    assert client.response().status == 404
    client.close()


def test_a_taken_metrics_port_is_a_startup_error(spawn, emulator, relay, certs, workdir):
    env = rt.relay_environment(certs, emulator.port, METRICS_PORT=relay.port)
    result = subprocess.run([rt.RELAY], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert f"METRICS_PORT: cannot listen on 127.0.0.1 port {relay.port}" in result.stderr


def near_expiry_p12(certs, directory, days):
    """A client certificate like make-test-certs' but valid for `days` more days."""
    key, csr, pem, p12 = (os.path.join(directory, f"soon.{ext}") for ext in ("key", "csr", "pem", "p12"))
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True, timeout=60)  # noqa: E731
    run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key)
    run("openssl", "req", "-new", "-key", key, "-subj", f"/UID={rt.TOPIC}/CN=Apple Push Services: {rt.TOPIC}",
        "-out", csr)
    run("openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(certs, "ca.pem"), "-CAkey",
        os.path.join(certs, "ca.key"), "-set_serial", "4242", "-days", str(days), "-out", pem)
    run("openssl", "pkcs12", "-export", "-in", pem, "-inkey", key, "-passout", "pass:secret", "-out", p12)
    return p12


def test_a_certificate_expiring_within_30_days_is_a_warning_and_still_delivers(spawn, emulator, certs, tmp_path):
    p12 = near_expiry_p12(certs, str(tmp_path), days=10)
    relay = spawn.relay("relay-expiring", emulator.port, P12_FILENAME=p12)
    assert relay.log_contains("warning APNs client certificate expires on ")
    assert re.search(r"\(in (9|10) days\): renew it", relay.read_log()), relay.read_log()
    subscriber = rt.Subscriber()
    path = f"/relay-to/production/{rt.TOKEN}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"still works")
    client = rt.Client(relay.port)
    client.send(rt.request_bytes("POST", path, headers, body))
    assert client.response().status == 201
    client.close()


def dated_p12(certs, directory, not_after):
    """A client certificate valid from yesterday until `not_after` (unix
    seconds); openssl 3.0's `x509 -req` cannot set an exact end, `ca` can."""
    stamp = lambda seconds: time.strftime("%Y%m%d%H%M%SZ", time.gmtime(seconds))  # noqa: E731
    run = lambda *argv: subprocess.run(argv, check=True, capture_output=True, timeout=60, cwd=directory)  # noqa: E731
    os.makedirs(os.path.join(directory, "new"))
    open(os.path.join(directory, "index.txt"), "w").close()
    with open(os.path.join(directory, "serial"), "w") as handle:
        handle.write("4243\n")
    with open(os.path.join(directory, "ca.cnf"), "w") as handle:
        handle.write(f"""[ca]
default_ca = dated
[dated]
dir = {directory}
database = {directory}/index.txt
new_certs_dir = {directory}/new
serial = {directory}/serial
default_md = sha256
policy = anything
unique_subject = no
[anything]
UID = optional
commonName = supplied
[client_ext]
basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
""")
    run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "short.key")
    run("openssl", "req", "-new", "-key", "short.key", "-subj",
        f"/UID={rt.TOPIC}/CN=Apple Push Services: {rt.TOPIC}", "-out", "short.csr")
    run("openssl", "ca", "-batch", "-notext", "-config", "ca.cnf", "-cert", os.path.join(certs, "ca.pem"),
        "-keyfile", os.path.join(certs, "ca.key"), "-startdate", stamp(time.time() - 86400),
        "-enddate", stamp(not_after), "-extensions", "client_ext", "-preserveDN", "-in", "short.csr",
        "-out", "short.pem")
    run("openssl", "pkcs12", "-export", "-in", "short.pem", "-inkey", "short.key", "-passout", "pass:secret",
        "-out", "short.p12")
    return os.path.join(directory, "short.p12")


def test_a_certificate_expiring_while_running_is_an_error_and_turns_health_503(spawn, emulator, certs, tmp_path):
    not_after = int(time.time()) + 6
    p12 = dated_p12(certs, str(tmp_path), not_after)
    relay = spawn.relay("relay-expires-now", emulator.port, P12_FILENAME=p12)
    assert relay.log_contains("warning APNs client certificate expires on ")
    client = rt.Client(relay.port)
    client.send(rt.health_request())
    assert client.response().status == 200
    # Bounded wait past the end of validity plus the once-a-second check.
    assert relay.log_contains("error APNs client certificate expired on ", timeout=max(1, not_after - time.time()) + 5)
    client.send(rt.health_request())
    health = client.response()
    assert health.status == 503, health
    assert b"APNs rejects the relay's credentials" in health.body
    # APNs (the emulator) refuses the handshake: the sender hears 5xx, never
    # a 4xx that would make Mastodon drop the subscription.
    path = f"/relay-to/production/{rt.TOKEN}"
    body, headers = rt.mastodon_push(rt.Subscriber(), "https://relay.test" + path, b"too late")
    client.send(rt.request_bytes("POST", path, headers, body))
    assert client.response().status in (502, 503)
    client.close()


def test_a_certificate_with_a_year_left_logs_no_expiry_warning(relay):
    assert relay.log_contains("listening on")
    assert "certificate expires" not in relay.read_log()
