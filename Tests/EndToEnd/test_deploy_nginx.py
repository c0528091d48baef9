"""The systemd + nginx home: Debian's nginx runs config/nginx-toot-relay.conf
(a throwaway certificate, loopback ports and the relay's port substituted,
nothing else) in front of the relay; real encrypted Web Pushes go over HTTPS
through it to the APNs emulator and decrypt on the other side."""

import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest
import pywebpush
import requests

import nginxserver as ns
import relaytest as rt

SITE = os.path.join(rt.ROOT, "config", "nginx-toot-relay.conf")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

pytestmark = pytest.mark.skipif(not os.path.exists(NGINX), reason="nginx missing (scripts/setup installs it)")


def render_site(certs, directory, upstream_port, https_port, http_port):
    """The site file with only addresses, certificate and log path replaced."""
    return ns.render(SITE, [
        ("    server 127.0.0.1:42069;\n", f"    server 127.0.0.1:{upstream_port};\n", 1),
        ("    listen 443 ssl;\n", f"    listen 127.0.0.1:{https_port} ssl;\n", 1),
        ("    listen [::]:443 ssl;\n", "", 1),
        ("    listen 80;\n", f"    listen 127.0.0.1:{http_port};\n", 1),
        ("    listen [::]:80;\n", "", 1),
        ("/etc/letsencrypt/live/relay.example.com/fullchain.pem", os.path.join(certs, "server-chain.pem"), 1),
        ("/etc/letsencrypt/live/relay.example.com/privkey.pem", os.path.join(certs, "server.key"), 1),
        ("/var/log/nginx/toot-relay.access.log", os.path.join(directory, "access.log"), 1),
    ])


class Nginx(ns.NginxServer):
    def __init__(self, certs, directory, upstream_port):
        self.https_port, self.http_port = rt.free_port(), rt.free_port()
        super().__init__(directory, render_site(certs, directory, upstream_port, self.https_port, self.http_port),
                         [self.https_port, self.http_port])


@pytest.fixture
def front(certs, tmp_path):
    started = []

    def start(upstream_port):
        nginx = Nginx(certs, str(tmp_path), upstream_port)
        started.append(nginx)
        return nginx

    yield start
    for nginx in started:
        nginx.stop()


https_session = ns.https_session


def metric(relay_log, scrape_port, series):
    text = requests.get(f"http://127.0.0.1:{scrape_port}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{series} not in {text}")


def test_encrypted_web_pushes_over_https_through_nginx_decrypt_on_the_other_side(spawn, emulator, front, certs):
    relay = spawn.relay("relay-behind-nginx", emulator.port, METRICS_PORT=0)
    assert relay.log_contains("metrics on 127.0.0.1:")
    scrape_port = int(re.search(r"metrics on 127\.0\.0\.1:(\d+)", relay.read_log()).group(1))
    nginx = front(relay.port)
    session = https_session(certs)
    subscriber = rt.Subscriber()
    for index in range(12):
        encoding = "aesgcm" if index % 2 else "aes128gcm"
        environment = "production" if index % 3 else "development"
        endpoint = f"https://127.0.0.1:{nginx.https_port}/relay-to/{environment}/{rt.TOKEN}/account/{index}"
        plaintext = f'{{"notification_id": {index}, "title": "Mastodon", "body": "héllo 🐘"}}'.encode()
        pusher = pywebpush.WebPusher(subscriber.subscription(endpoint), requests_session=session)
        response = pusher.send(plaintext, headers={"Urgency": "normal"}, ttl=172800, content_encoding=encoding,
                               timeout=10)
        assert response.status_code == 201, (response.status_code, response.text, nginx.error_log())
        apns_id = response.headers["Location"].rsplit("/", 1)[1]
        received = rt.recorded(emulator, apns_id)
        assert received["token"] == rt.TOKEN
        payload = json.loads(received["payload"])
        assert payload["x"] == f"account/{index}"
        assert rt.decrypt_notification(payload, subscriber) == plaintext
    # One sender connection at the relay, reused for every request: nginx
    # kept its upstream connection alive (without keepalive it would open
    # and close one per request, and none would be open now).
    assert metric(relay.read_log(), scrape_port, "toot_relay_sender_connections") == 1
    assert metric(relay.read_log(), scrape_port,
                  'toot_relay_notifications_total{app="default",service="apns",environment="production",status="201",reason=""}') == 8
    # nginx logs the sender's address, never the path with its token.
    log = nginx.access_log()
    assert log.count('127.0.0.1 - [') == 12 and log.count('"POST" 201 ') == 12, log
    assert rt.TOKEN not in log


@pytest.mark.parametrize("encoding", ["aesgcm", "aes128gcm"])
def test_metatext_pushes_through_nginx_decrypt_from_i_m_s_k(spawn, emulator, front, certs, encoding):
    relay = spawn.relay(f"relay-behind-nginx-metatext-{encoding}", emulator.port)
    nginx = front(relay.port)
    session = https_session(certs)
    subscriber = rt.Subscriber()
    # Mona's form with the query, as the app registers it: nginx passes both.
    endpoint = f"https://127.0.0.1:{nginx.https_port}/push/{rt.TOPIC}/{rt.TOKEN}/acct%2F9?sandbox=true"
    plaintext = b'{"notification_id": 9, "title": "Mastodon"}'
    pusher = pywebpush.WebPusher(subscriber.subscription(endpoint), requests_session=session)
    response = pusher.send(plaintext, ttl=60, content_encoding=encoding, timeout=10)
    assert response.status_code == 201, (response.status_code, response.text, nginx.error_log())
    payload = json.loads(rt.recorded(emulator, response.headers["Location"].rsplit("/", 1)[1])["payload"])
    assert payload["i"] == "acct/9"
    assert rt.decrypt_metatext_notification(payload, subscriber) == plaintext
    assert session.get(endpoint, timeout=10).status_code == 405
    assert rt.TOKEN not in nginx.access_log()


def test_relay_answers_pass_through_and_other_paths_are_404(spawn, emulator, front, certs):
    relay = spawn.relay("relay-behind-nginx-answers", emulator.port)
    nginx = front(relay.port)
    session = https_session(certs)
    base = f"https://127.0.0.1:{nginx.https_port}"
    assert session.get(base + "/relay-to/_health", timeout=10).text == "OK"
    gone = session.post(base + f"/relay-to/production/{rt.fault_token(0x01)}", data=b"x" * 100,
                        headers={"Content-Encoding": "aes128gcm", "TTL": "60"}, timeout=10)
    # A malformed aes128gcm header is the relay's own 400 with its reason.
    assert gone.status_code == 400 and gone.text.endswith("\n")
    assert session.get(base + "/", timeout=10).status_code == 404
    redirect = session.get(f"http://127.0.0.1:{nginx.http_port}/relay-to/_health", allow_redirects=False,
                            timeout=10)
    assert redirect.status_code == 301
    assert redirect.headers["Location"] == "https://127.0.0.1/relay-to/_health"


def test_tls_versions_below_1_2_are_refused(spawn, emulator, front, certs):
    relay = spawn.relay("relay-behind-nginx-tls", emulator.port)
    nginx = front(relay.port)
    for version, accepted in ((ssl.TLSVersion.TLSv1_2, True), (ssl.TLSVersion.TLSv1_3, True)):
        context = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
        context.minimum_version = context.maximum_version = version
        with socket.create_connection(("127.0.0.1", nginx.https_port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                assert tls.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    # TLS 1.1 is refused by nginx (openssl's client at security level 0
    # offers it); the same client with TLS 1.2 gets through.
    def s_client(option):
        return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{nginx.https_port}", option,
                               "-cipher", "DEFAULT@SECLEVEL=0"], input=b"", capture_output=True, timeout=20)
    refused = s_client("-tls1_1")
    assert refused.returncode != 0 and b"alert protocol version" in refused.stderr, refused
    assert s_client("-tls1_2").returncode == 0


def test_the_relay_gets_the_real_client_address_the_origin_and_a_kept_alive_connection(front, certs):
    # A stand-in upstream that records the request heads nginx sends.
    heads = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(20)

    def serve():
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.settimeout(10)
            buffer = b""
            for _ in range(3):  # three requests on the same upstream connection
                while b"\r\n\r\n" not in buffer:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                heads.append(head.decode("latin-1"))
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    nginx = front(listener.getsockname()[1])
    session = https_session(certs)
    # By name (the certificate's DNS name) on a port other than 443, then by address.
    assert session.get(f"https://localhost:{nginx.https_port}/relay-to/_health", timeout=10).text == "OK"
    assert session.get(f"https://127.0.0.1:{nginx.https_port}/push/_health", headers={"X-Forwarded-For": "203.0.113.9"},
                       timeout=10).text == "OK"
    # HTTP/1.0 without a Host header: nginx puts its server name in.
    context = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
    with socket.create_connection(("127.0.0.1", nginx.https_port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"GET /relay-to/_health HTTP/1.0\r\n\r\n")
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"OK"), answer
    thread.join(timeout=20)
    listener.close()
    assert len(heads) == 3, heads
    first, second, third = ([line.lower() for line in head.split("\r\n")] for head in heads)
    assert first[0] == "get /relay-to/_health http/1.1"
    assert "x-real-ip: 127.0.0.1" in first and "x-forwarded-for: 127.0.0.1" in first
    assert not any(line.startswith("connection:") for line in first)
    # The origin the sender addressed, port included, which a restricted
    # endpoint's VAPID `aud` names (RFC 8292 §2): Host with its port (nginx's
    # $host would drop it) and the scheme nginx was reached by.
    assert f"host: localhost:{nginx.https_port}" in first, first
    assert "x-forwarded-proto: https" in first
    assert second[0] == "get /push/_health http/1.1"
    assert f"host: 127.0.0.1:{nginx.https_port}" in second and "x-forwarded-proto: https" in second, second
    # A forwarded chain is kept; X-Real-IP is what nginx saw itself.
    assert "x-forwarded-for: 203.0.113.9, 127.0.0.1" in second and "x-real-ip: 127.0.0.1" in second
    assert "host: relay.example.com" in third and "x-forwarded-proto: https" in third, third


@pytest.mark.parametrize("encoding", ["aesgcm", "aes128gcm"])
def test_restricted_pushes_through_nginx_on_another_port_name_the_origin_with_its_port(spawn, emulator, front,
                                                                                        certs, encoding):
    """pywebpush signs `aud` = https://127.0.0.1:<nginx port>; the
    relay (no PUBLIC_URL) rebuilds that origin from the Host and
    X-Forwarded-Proto nginx passes, so the subscribed key delivers and
    another key is refused."""
    import hashlib

    import py_vapid
    from cryptography.hazmat.primitives import serialization

    relay = spawn.relay(f"relay-behind-nginx-restricted-{encoding}", emulator.port)
    nginx = front(relay.port)
    session = https_session(certs)
    subscribed, other = py_vapid.Vapid02(), py_vapid.Vapid02()
    subscribed.generate_keys()
    other.generate_keys()
    point = subscribed.public_key.public_bytes(serialization.Encoding.X962,
                                               serialization.PublicFormat.UncompressedPoint)
    endpoint = (f"https://127.0.0.1:{nginx.https_port}/relay-to/production/{rt.TOKEN}"
                f"?vapid={rt.b64url(hashlib.sha256(point).digest())}")
    subscriber = rt.Subscriber()
    for key, status in [(subscribed, 201), (other, 403)]:
        before = len(rt.recorded(emulator))
        plaintext = f"restricted through nginx, {status}".encode()
        try:
            response = pywebpush.webpush(subscriber.subscription(endpoint), plaintext, vapid_private_key=key,
                                         vapid_claims={"sub": "mailto:admin@mastodon.test"},
                                         content_encoding=encoding, requests_session=session, ttl=60, timeout=10)
        except pywebpush.WebPushException as refused:  # raised for any status ≥ 300
            response = refused.response
        assert response.status_code == status, (response.status_code, response.text, relay.read_log()[-600:])
        if status == 201:
            payload = json.loads(rt.recorded(emulator, response.headers["Location"].rsplit("/", 1)[1])["payload"])
            assert rt.decrypt_notification(payload, subscriber) == plaintext
        else:
            time.sleep(0.2)
            assert len(rt.recorded(emulator)) == before
