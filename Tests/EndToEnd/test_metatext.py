"""The metatext-apns dialect: a real Web Push sender posts to
/push/<token>/<id> and /push/<topic>/<token>/<id>?sandbox=true; the test
decrypts from i/m/s/k what Metatext, Feditext or Mona would get."""

import base64
import json

import pytest

import relaytest as rt


@pytest.fixture(scope="module")
def environments(certs, workdir):
    """One emulator per APNs environment, so that where a push went shows."""
    production = rt.start_emulator(certs, workdir, name="metatext-production")
    development = rt.start_emulator(certs, workdir, name="metatext-development")
    env = rt.relay_environment(certs, production.port, APNS_TIMEOUT=2,
                               APNS_DEVELOPMENT_HOST=f"127.0.0.1:{development.port}")
    relay = rt.start_relay(env, workdir, name="metatext-relay")
    yield relay, production, development
    relay.kill()
    production.kill()
    development.kill()


CASES = [
    # (path after /push/, environment, encoding, id as sent, id decoded)
    (f"{rt.TOKEN}/42", "production", "aesgcm", "42", "42"),
    (f"{rt.TOKEN}/42", "production", "aes128gcm", "42", "42"),
    (f"{rt.TOPIC}/{rt.TOKEN}/acct%2F7?sandbox=true", "development", "aesgcm", "acct%2F7", "acct/7"),
    (f"{rt.TOPIC}/{rt.TOKEN}/acct%2F7?sandbox=true", "development", "aes128gcm", "acct%2F7", "acct/7"),
    (f"{rt.TOKEN.upper()}/%C3%A9?sandbox=true", "development", "aes128gcm", "%C3%A9", "é"),
]


@pytest.mark.parametrize("path, environment, encoding, raw_id, decoded_id", CASES)
def test_push_decrypts_byte_for_byte_from_i_m_s_k(environments, path, environment, encoding, raw_id,
                                                   decoded_id):
    relay, production, development = environments
    emulator = production if environment == "production" else development
    other = development if environment == "production" else production
    others_before = len(rt.recorded(other))
    subscriber = rt.Subscriber()
    plaintext = json.dumps({"notification_id": 42, "title": "Mastodon", "body": "héllo 🐘 " * 20}).encode()
    body, headers = rt.mastodon_push(subscriber, "https://relay.test/push/" + path, plaintext, encoding=encoding,
                                     ttl=3600, urgency="high", topic="mention42")
    client = rt.Client(relay.port)
    client.send(rt.request_bytes("POST", "/push/" + path, headers, body))
    response = client.response()
    client.close()
    assert response.status == 201, response
    assert response.header("TTL") == "3600"
    apns_id = response.header("Location").rsplit("/", 1)[1]

    received = rt.recorded(emulator, apns_id)
    assert received["token"] == rt.TOKEN
    sent = dict(received["headers"])
    assert sent["apns-topic"] == rt.TOPIC
    assert sent["apns-push-type"] == "alert"
    assert sent["apns-priority"] == "10"
    assert sent["apns-collapse-id"] == "mention42"
    assert len(rt.recorded(other)) == others_before

    payload = json.loads(received["payload"])
    assert payload["aps"] == {"alert": {"loc-key": "apns-default-message"}, "mutable-content": 1}
    assert payload["i"] == decoded_id
    # m: the whole body, URL-safe base64 with padding, as Ruby's urlsafe_encode64 writes it.
    assert payload["m"] == base64.urlsafe_b64encode(body).decode()
    if encoding == "aesgcm":
        assert set(payload) == {"aps", "i", "m", "s", "k"}
        written = dict(headers)
        assert payload["s"] == written["Encryption"].split("salt=")[1].split(";")[0]
        assert payload["k"] == written["Crypto-Key"].split("dh=")[1].split(";")[0]
    else:
        assert set(payload) == {"aps", "i", "m"}
    assert rt.decrypt_metatext_notification(payload, subscriber) == plaintext


REFUSED = [
    ("POST", f"/push/com.example.unknown/{rt.TOKEN}/42", 503),  # an app the relay does not have: ours
    ("POST", f"/push/{rt.TOKEN[:-1]}/42", 404),
    ("POST", f"/push/{rt.TOKEN}", 404),
    ("POST", f"/push/{rt.TOKEN}/42/extra", 404),
    ("GET", f"/push/{rt.TOKEN}/42", 405),
    ("POST", f"/push/{rt.TOKEN}/big", 413),
]


@pytest.mark.parametrize("method, path, status", REFUSED)
def test_refused_push_requests_reach_no_apns(environments, method, path, status):
    relay, production, development = environments
    before = (len(rt.recorded(production)), len(rt.recorded(development)))
    # Over 4096 bytes once encrypted: more than a push service takes (RFC 8030 §7.2).
    plaintext = b"x" * (4100 if path.endswith("/big") else 10)
    body, headers = rt.mastodon_push(rt.Subscriber(), "https://relay.test" + path, plaintext, encoding="aes128gcm")
    client = rt.Client(relay.port)
    client.send(rt.request_bytes(method, path, headers if method == "POST" else (),
                                 body if method == "POST" else b""))
    response = client.response()
    client.close()
    assert response.status == status, response
    if status == 405:
        assert response.header("Allow") == "POST"
    assert (len(rt.recorded(production)), len(rt.recorded(development))) == before
