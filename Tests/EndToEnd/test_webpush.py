"""A real Web Push sender (pywebpush/http_ece, Mastodon's headers) through
the relay to the APNs emulator; the test decrypts what the app would get."""

import json
import time
import urllib.parse

import relaytest as rt

PRIORITY = {"very-low": "5", "low": "5", "normal": "10", "high": "10"}
EXTRAS = [None, "a", "account/42/notifications", "ünïcødé & spaces", "%41-literal/%zz", "x" * 200]


def test_z85_decoder_vectors():
    vectors = {"": "", "00": "00", "ff": "30", "ffff": "960", "ffffff": "rr90", "00000000": "00000",
               "ffffffff": "%nSc0", "864FD26FB559F75B": "HelloWorld", "864FD26FB559F75B01": "HelloWorld01",
               "864FD26FB559F75Bffffff": "HelloWorldrr90"}
    for hex_bytes, text in vectors.items():
        assert rt.z85_decode(text) == bytes.fromhex(hex_bytes)


def test_hundred_and_twenty_messages_decrypt_byte_for_byte(relay, emulator):
    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    seen = 0
    for index in range(120):
        encoding = "aesgcm" if index % 2 == 0 else "aes128gcm"
        extra = EXTRAS[index % len(EXTRAS)]
        environment = "production" if index % 3 else "development"
        urgency = list(PRIORITY)[index % 4]
        topic = f"topic{index % 7}" if index % 5 == 0 else None
        ttl = 0 if index % 11 == 0 else 172800
        path = f"/relay-to/{environment}/{rt.TOKEN}"
        if extra is not None:
            path += "/" + urllib.parse.quote(extra, safe="/%")
        plaintext = json.dumps({"notification_id": index, "title": "Mastodon", "body": "héllo 🐘 " * (index % 9),
                                "preferred_locale": "en"}).encode()
        body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, plaintext, encoding=encoding,
                                         ttl=ttl, urgency=urgency, topic=topic)
        before = int(time.time())
        client.send(rt.request_bytes("POST", path, headers, body))
        response = client.response()
        after = int(time.time())
        assert response.status == 201, response
        assert response.header("TTL") == str(ttl)
        location = response.header("Location")
        assert location.startswith("/relay-to/message/")
        apns_id = location.rsplit("/", 1)[1]

        received = rt.recorded(emulator, apns_id)
        assert received["token"] == rt.TOKEN
        headers_sent = dict((key, value) for key, value in received["headers"])
        assert headers_sent["apns-topic"] == rt.TOPIC
        assert headers_sent["apns-push-type"] == "alert"
        assert headers_sent["apns-priority"] == PRIORITY[urgency]
        expiration = int(headers_sent["apns-expiration"])
        if ttl == 0:
            assert expiration == 0
        else:
            assert before + ttl <= expiration <= after + ttl
        assert headers_sent.get("apns-collapse-id") == topic
        assert headers_sent["apns-id"] == apns_id

        payload = json.loads(received["payload"])
        assert payload["aps"] == {"alert": "🎺", "mutable-content": 1, "content-available": 1}
        if extra is None:
            assert "x" not in payload
        else:
            assert payload["x"] == urllib.parse.unquote(urllib.parse.quote(extra, safe="/%"), errors="replace")
        if encoding == "aesgcm":
            assert set(payload) >= {"p", "k", "s"}
        else:
            assert "k" not in payload and "s" not in payload
        assert rt.decrypt_notification(payload, subscriber) == plaintext
        seen += 1
    client.close()
    assert seen == 120


def test_extra_path_is_percent_decoded_exactly(relay, emulator):
    subscriber = rt.Subscriber()
    client = rt.Client(relay.port)
    cases = {"simple": "simple", "a%2Fb/c": "a/b/c", "%E2%9C%93": "✓", "100%": "100%", "sp%20ace": "sp ace"}
    for raw, expected in cases.items():
        path = f"/relay-to/production/{rt.TOKEN}/{raw}"
        body, headers = rt.mastodon_push(subscriber, "https://relay.test" + path, b"x", encoding="aes128gcm")
        client.send(rt.request_bytes("POST", path, headers, body))
        response = client.response()
        assert response.status == 201, response
        received = rt.recorded(emulator, response.header("Location").rsplit("/", 1)[1])
        assert json.loads(received["payload"])["x"] == expected
    client.close()
