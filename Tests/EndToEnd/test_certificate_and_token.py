"""One emulator serves a relay with a client certificate and a relay with a
provider token at once, as one APNs host does (the end-to-end tests run one
emulator per environment for apps of both kinds): each push reaches it on
its own credential and decrypts byte for byte; a key scoped to the other
environment is the relay's credential problem, never a 4xx."""

import json
import os

import relaytest as rt

KEY_ID = "KEYID12345"
TEAM_ID = "TEAMID6789"


def push(port, environment, plaintext):
    subscriber = rt.Subscriber()
    path = f"/relay-to/{environment}/{rt.TOKEN}"
    body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, plaintext)
    client = rt.Client(port)
    client.send(rt.request_bytes("POST", path, headers, body))
    response = client.response()
    client.close()
    return response, subscriber


def health(port):
    client = rt.Client(port)
    client.send(rt.health_request())
    response = client.response()
    client.close()
    return response.status


def test_a_certificate_relay_and_a_token_relay_share_one_emulator(certs, spawn):
    # start_emulator passes --client-ca; the key makes it take tokens too.
    # The key is scoped to production, as Apple's 2025 keys can be; the
    # development host is an emulator that plays the sandbox.
    key = ("--provider-key", f"key-id={KEY_ID},team-id={TEAM_ID},"
           f"public-key={os.path.join(certs, 'authkey-public.pem')},environment=production")
    emulator = spawn.emulator("emulator-both", *key)
    sandbox = spawn.emulator("emulator-both-sandbox", *key, "--environment", "development")
    assert emulator.log_contains("as APNs production, checking client certificates, or provider tokens of 1 key(s)")
    by_certificate = spawn.relay("relay-certificate", emulator.port)
    by_token = spawn.relay("relay-token", emulator.port, APNS_DEVELOPMENT_HOST=f"127.0.0.1:{sandbox.port}",
                           TOKEN_AUTH_KEY_FILENAME=os.path.join(certs, "authkey.p8"),
                           TOKEN_KEY_ID=KEY_ID, TOKEN_TEAM_ID=TEAM_ID, TOPIC=rt.TOPIC)

    for relay, plaintext, authenticated_as, key_id in [
        (by_certificate, b"by certificate", rt.TOPIC, None),
        (by_token, b"by token", TEAM_ID, KEY_ID),
    ]:
        response, subscriber = push(relay.port, "production", plaintext)
        assert response.status == 201, response
        received = rt.recorded(emulator, response.header("Location").rsplit("/", 1)[1])
        assert received["topic"] == rt.TOPIC
        assert received["authenticated_as"] == authenticated_as
        assert received.get("key_id") == key_id
        assert rt.decrypt_notification(json.loads(received["payload"]), subscriber) == plaintext

    # The production-only key in the sandbox: 403 BadEnvironmentKeyInToken,
    # the relay's credential problem (502, health 503), not the
    # subscription's (a 4xx would make Mastodon delete it).
    response, _ = push(by_token.port, "development", b"wrong environment")
    assert response.status == 502, response
    assert b"BadEnvironmentKeyInToken" in response.body
    assert health(by_token.port) == 503
    assert health(by_certificate.port) == 200
    assert rt.recorded(sandbox) == []
