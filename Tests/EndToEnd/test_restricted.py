"""Restricted endpoints (RFC 8292 §4): an endpoint URL carrying
?vapid=<SHA-256 of the Mastodon server's VAPID key> takes pushes signed by
that key only. A real sender (py_vapid, pywebpush/http_ece) in both
encodings and both header forms; every refused push reaches no APNs."""

import hashlib
import json
import os
import subprocess
import time

import py_vapid
import pytest
from cryptography.hazmat.primitives import serialization

import relaytest as rt

AUDIENCE = "https://relay.test"


def new_key():
    key = py_vapid.Vapid02()
    key.generate_keys()
    return key


def raw_public(key):
    return key.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def key_hash(key):
    return rt.b64url(hashlib.sha256(raw_public(key)).digest())


def vapid_headers(key, form, aud=AUDIENCE, exp=None):
    """The Authorization (and Crypto-Key) a sender signs with `key`: RFC 8292's
    `vapid t=, k=` or draft-01's `WebPush` + `Crypto-Key: p256ecdsa=`."""
    claims = {"aud": aud, "sub": "mailto:admin@mastodon.test", "exp": exp or int(time.time()) + 43200}
    token = key.sign(dict(claims))["Authorization"].split("t=", 1)[1].split(",", 1)[0]
    public = rt.b64url(raw_public(key))
    if form == "vapid":
        return [("Authorization", f"vapid t={token}, k={public}")], None
    return [("Authorization", f"WebPush {token}")], f"p256ecdsa={public}"


@pytest.fixture(scope="module")
def stack(certs, workdir):
    emulator = rt.start_emulator(certs, workdir, name="restricted-emulator")
    env = rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE)
    relay = rt.start_relay(env, workdir, name="restricted-relay")
    yield relay, emulator
    relay.kill()
    emulator.kill()


def push(port, path, encoding, auth_headers, crypto_key_extra, plaintext=b"restricted"):
    subscriber = rt.Subscriber()
    endpoint = AUDIENCE + path
    body, headers = rt.mastodon_push(subscriber, endpoint, plaintext, encoding=encoding, ttl=600)
    # Replace the sender's own VAPID headers with the ones under test.
    kept = [(name, value) for name, value in headers if name not in ("Authorization",)]
    if crypto_key_extra is not None or encoding == "aesgcm":
        fixed = []
        for name, value in kept:
            if name == "Crypto-Key":
                parts = [part for part in value.split(";") if not part.startswith("p256ecdsa=")]
                if crypto_key_extra:
                    parts.append(crypto_key_extra)
                value = ";".join(parts)
            fixed.append((name, value))
        kept = fixed
        if encoding == "aes128gcm" and crypto_key_extra:
            kept.append(("Crypto-Key", crypto_key_extra))
    client = rt.Client(port)
    client.send(rt.request_bytes("POST", path, kept + auth_headers, body))
    response = client.response()
    client.close()
    return response, subscriber


SUBSCRIBED = new_key()
OTHER = new_key()


@pytest.mark.parametrize("encoding", ["aesgcm", "aes128gcm"])
@pytest.mark.parametrize("form", ["vapid", "webpush"])
def test_the_subscribed_key_delivers_and_decrypts(stack, encoding, form):
    relay, emulator = stack
    path = f"/relay-to/production/{rt.TOKEN}?vapid={key_hash(SUBSCRIBED)}"
    auth, crypto_key = vapid_headers(SUBSCRIBED, form)
    plaintext = f"restricted {encoding} {form}".encode()
    response, subscriber = push(relay.port, path, encoding, auth, crypto_key, plaintext)
    assert response.status == 201, response
    received = rt.recorded(emulator, response.header("Location").rsplit("/", 1)[1])
    assert rt.decrypt_notification(json.loads(received["payload"]), subscriber) == plaintext


def test_the_metatext_url_takes_the_vapid_parameter_beside_sandbox(stack):
    relay, emulator = stack
    path = f"/push/{rt.TOKEN}/7?vapid={key_hash(SUBSCRIBED)}&sandbox=true"
    auth, crypto_key = vapid_headers(SUBSCRIBED, "vapid")
    response, subscriber = push(relay.port, path, "aes128gcm", auth, crypto_key, b"metatext restricted")
    assert response.status == 201, response
    received = rt.recorded(emulator, response.header("Location").rsplit("/", 1)[1])
    assert rt.decrypt_metatext_notification(json.loads(received["payload"]), subscriber) == b"metatext restricted"


REFUSED = [
    # (what, key, form, aud, exp offset, status)
    ("another server's key", OTHER, "vapid", AUDIENCE, 43200, 403),
    ("another server's key, draft form", OTHER, "webpush", AUDIENCE, 43200, 403),
    ("another audience", SUBSCRIBED, "vapid", "https://other-relay.test", 43200, 503),
    ("expired", SUBSCRIBED, "vapid", AUDIENCE, -60, 503),
    ("more than a day ahead", SUBSCRIBED, "webpush", AUDIENCE, 3 * 86400, 503),
]


@pytest.mark.parametrize("what, key, form, aud, exp_offset, status", REFUSED, ids=[row[0] for row in REFUSED])
def test_refused_pushes_reach_no_apns(stack, what, key, form, aud, exp_offset, status):
    relay, emulator = stack
    before = len(rt.recorded(emulator))
    path = f"/relay-to/production/{rt.TOKEN}?vapid={key_hash(SUBSCRIBED)}"
    auth, crypto_key = vapid_headers(key, form, aud=aud, exp=int(time.time()) + exp_offset)
    response, _ = push(relay.port, path, "aes128gcm" if form == "vapid" else "aesgcm", auth, crypto_key)
    assert response.status == status, response
    assert response.body.count(b"\n") == 1
    if status == 503:
        assert response.header("Retry-After") is not None
    time.sleep(0.2)
    assert len(rt.recorded(emulator)) == before


def test_no_authentication_is_401(stack):
    relay, emulator = stack
    before = len(rt.recorded(emulator))
    path = f"/relay-to/production/{rt.TOKEN}?vapid={key_hash(SUBSCRIBED)}"
    response, _ = push(relay.port, path, "aes128gcm", [], None)
    assert response.status == 401, response
    time.sleep(0.2)
    assert len(rt.recorded(emulator)) == before


def test_an_unrestricted_endpoint_still_takes_any_push(stack):
    relay, _ = stack
    response, _ = push(relay.port, f"/relay-to/production/{rt.TOKEN}", "aesgcm", [], None)
    assert response.status == 201, response


def test_a_restricted_only_app_refuses_unrestricted_endpoints(certs, workdir, tmp_path):
    emulator = rt.start_emulator(certs, workdir, name="restricted-only-emulator")
    apps = tmp_path / "apps.toml"
    apps.write_text(f'[[app]]\nid = "strict"\np12-file = "{os.path.join(certs, "client.p12")}"\n'
                    'p12-password = "secret"\nrestricted-only = true\ndefault = true\n')
    env = rt.relay_environment(certs, emulator.port, PUBLIC_URL=AUDIENCE, P12_FILENAME="", P12_PASSWORD="",
                               APPS_FILE=str(apps))
    relay = rt.start_relay(env, workdir, name="restricted-only-relay")
    try:
        for path in (f"/relay-to/production/{rt.TOKEN}", f"/relay-to/strict/production/{rt.TOKEN}",
                     f"/push/strict/{rt.TOKEN}/1"):
            response, _ = push(relay.port, path, "aesgcm", [], None)
            assert response.status == 403, response
            assert b"restricted endpoints only" in response.body
        auth, crypto_key = vapid_headers(SUBSCRIBED, "vapid")
        response, _ = push(relay.port, f"/relay-to/strict/production/{rt.TOKEN}?vapid={key_hash(SUBSCRIBED)}",
                           "aes128gcm", auth, crypto_key)
        assert response.status == 201, response
        assert len(rt.recorded(emulator)) == 1
    finally:
        relay.kill()
        emulator.kill()


def test_check_config_prints_the_origin_a_vapid_aud_must_name(certs, stack):
    env = rt.relay_environment(certs, 1, PUBLIC_URL="HTTPS://Relay.Test/")
    result = subprocess.run([rt.RELAY, "check-config"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "restricted endpoints: a VAPID aud must name https://relay.test (PUBLIC_URL)" in result.stdout
    bad = subprocess.run([rt.RELAY, "check-config"], env={**env, "PUBLIC_URL": "https://relay.test/path"},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "PUBLIC_URL" in bad.stderr
