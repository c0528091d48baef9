"""The fediverse servers that push to the relay, as Python stand-ins: each
encrypts, signs and frames its request exactly as its server does, and says
what its server then does with the subscription for each answer. Where each
detail comes from (repository and file) is in WIRE.md §3.1.

What a server does with an answer is one of DELIVERED (a 2xx), DELETES (the
subscription is gone for good), RETRIES (the same push is sent again later)
or DROPS (this push is lost, the subscription stays). `None` stands for no
HTTP answer at all (the connection closed, was reset or timed out)."""

import base64
import hashlib
import json
import os
import time
import urllib.parse
from email.utils import formatdate

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

DELIVERED, DELETES, RETRIES, DROPS = "delivered", "deletes", "retries", "drops"


# MARK: what each server does with an answer

def mastodon_does(status):
    """Web::PushNotificationWorker (4.x): `destroy!` on a 4xx other than 408
    and 429; any other non-2xx raises UnexpectedResponseError and a failed
    connection raises HTTP::Error, both retried by Sidekiq (retry: 5)."""
    if status is None:
        return RETRIES
    if 200 <= status <= 299:
        return DELIVERED
    if 400 <= status <= 499 and status not in (408, 429):
        return DELETES
    return RETRIES


def pleroma_does(status):
    """Pleroma.Web.Push.Impl (Pleroma and Akkoma): `Repo.delete!` on any
    status in 400..499; any other status or error is logged and the job ends
    (:error is returned, not raised: Oban does not run it again)."""
    if status is None:
        return DROPS
    if 200 <= status <= 299:
        return DELIVERED
    if 400 <= status <= 499:
        return DELETES
    return DROPS


def gotosocial_does(status):
    """realsender.go's sendToSubscription, behind httpclient.Client: 429 and
    5xx are retried by the client (5 retries, Retry-After honoured up to its
    backoff cap), as are failed connections (not TLS or certificate errors);
    408 and 413 are logged and dropped; every other status deletes."""
    if status is None:
        return RETRIES
    if 200 <= status <= 299:
        return DELIVERED
    if status == 429 or 500 <= status <= 599:
        return RETRIES
    if status in (408, 413):
        return DROPS
    return DELETES


def misskey_does(status):
    """PushNotificationService.ts (Misskey and Sharkey): the web-push promise
    rejects for any non-2xx; the subscription is deleted only for 410, and
    nothing is sent again."""
    if status is None:
        return DROPS
    if 200 <= status <= 299:
        return DELIVERED
    if status == 410:
        return DELETES
    return DROPS


# MARK: encodings

def b64url(data, padded=False):
    text = base64.urlsafe_b64encode(data).decode()
    return text if padded else text.rstrip("=")


def _hkdf(salt, ikm, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def _ephemeral_key(p256dh):
    """A single-use application server key pair and its ECDH secret with the
    subscriber's key (RFC 8291 §3.1)."""
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(serialization.Encoding.X962,
                                                serialization.PublicFormat.UncompressedPoint)
    receiver = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), p256dh)
    return public, private.exchange(ec.ECDH(), receiver)


def encrypt_aesgcm(plaintext, p256dh, auth, pad=0):
    """draft-ietf-webpush-encryption-04 (`aesgcm`), one record whatever its
    length, as the webpush gem's Legacy::Encryption and web_push_encryption's
    Encrypt do: a two-byte padding length, `pad` zero bytes, the message.
    Returns (ciphertext, salt, application server public key)."""
    salt = os.urandom(16)
    server_public, secret = _ephemeral_key(p256dh)
    prk = _hkdf(auth, secret, b"Content-Encoding: auth\x00", 32)
    context = (b"P-256\x00" + len(p256dh).to_bytes(2, "big") + p256dh
               + len(server_public).to_bytes(2, "big") + server_public)
    key = _hkdf(salt, prk, b"Content-Encoding: aesgcm\x00" + context, 16)
    nonce = _hkdf(salt, prk, b"Content-Encoding: nonce\x00" + context, 12)
    record = pad.to_bytes(2, "big") + b"\x00" * pad + plaintext
    return AESGCM(key).encrypt(nonce, record, None), salt, server_public


def encrypt_aes128gcm(plaintext, p256dh, auth, rs=4096, pad=0):
    """RFC 8291 `aes128gcm` in one record (RFC 8188 §2): the header (salt,
    rs, the key id = the application server key), then message, delimiter
    0x02 and `pad` zero bytes, sealed. A second record is never needed for a
    body within RFC 8030's 4096 bytes at rs 4096, nor at GoToSocial's rs."""
    if len(plaintext) + 1 + pad + 16 > rs:
        raise ValueError(f"{len(plaintext)} bytes do not fit one record of {rs}")
    salt = os.urandom(16)
    server_public, secret = _ephemeral_key(p256dh)
    ikm = _hkdf(auth, secret, b"WebPush: info\x00" + p256dh + server_public, 32)
    key = _hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = _hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    header = salt + rs.to_bytes(4, "big") + bytes([len(server_public)]) + server_public
    return header + AESGCM(key).encrypt(nonce, plaintext + b"\x02" + b"\x00" * pad, None)


AES128GCM_HEADER_BYTES = 16 + 4 + 1 + 65


class VapidKey:
    """A server's VAPID key pair (RFC 8292): signs ES256 JWTs with a raw
    r‖s signature (RFC 7518 §3.4)."""

    def __init__(self):
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.public = self.private_key.public_key().public_bytes(serialization.Encoding.X962,
                                                                 serialization.PublicFormat.UncompressedPoint)

    def key_hash(self):
        """The `vapid=` parameter of an endpoint restricted to this key."""
        return b64url(hashlib.sha256(self.public).digest())

    def jwt(self, header, claims):
        def part(value):
            return b64url(json.dumps(value, separators=(",", ":")).encode())
        signing_input = f"{part(header)}.{part(claims)}".encode()
        r, s = decode_dss_signature(self.private_key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        return signing_input.decode() + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def origin(endpoint, keep_port=True, keep_default_port=False):
    """scheme://host[:port] of an endpoint, as a sender computes `aud`."""
    url = urllib.parse.urlsplit(endpoint)
    host = url.hostname
    default = {"https": 443, "http": 80}.get(url.scheme)
    if keep_port and url.port is not None and (keep_default_port or url.port != default):
        host += f":{url.port}"
    return f"{url.scheme}://{host}"


def http_request(endpoint, headers, body):
    """The HTTP/1.1 request a sender writes for `endpoint`: Host as the
    endpoint names it, Content-Length unless the sender wrote one."""
    url = urllib.parse.urlsplit(endpoint)
    target = url.path + (f"?{url.query}" if url.query else "")
    lines = [f"POST {target} HTTP/1.1", f"Host: {url.netloc}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if not any(name.lower() == "content-length" for name, _ in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _fill(make, length, filler="x"):
    """make(text) for the `text` (a run of `filler`) that makes the JSON
    exactly `length` bytes, or make(None) when no length is asked."""
    if length is None:
        return make(None)
    base = len(make(""))
    if base > length:
        raise ValueError(f"the smallest notification is {base} bytes, more than {length}")
    return make(filler * (length - base))


# MARK: the servers

class Sender:
    """One fediverse server's Web Push sending. `push` returns the headers
    and body it sends to `endpoint` for a subscriber (whose `public_key` and
    `auth` are the subscription's p256dh and auth); `does(status)` what it
    then does with the subscription."""

    name = "?"
    encoding = "?"
    ttl = 0
    # About the most a notification of this server's own weighs, in bytes
    # of JSON, after its own truncation (WIRE.md §3.1, "Sizes").
    largest = 0
    # The longest message its encryption library takes (None: no limit).
    library_limit = None
    # Body bytes beyond the message: aesgcm's padding length and tag (18),
    # aes128gcm's header, delimiter and tag (86 + 1 + 16).
    overhead = 0

    def __init__(self):
        self.vapid = VapidKey()

    def __repr__(self):
        return self.name

    @staticmethod
    def does(status):
        raise NotImplementedError

    def audience(self, endpoint):
        raise NotImplementedError

    def notification(self, length=None):
        raise NotImplementedError

    def push(self, subscriber, endpoint, plaintext):
        raise NotImplementedError

    def request(self, subscriber, endpoint, plaintext):
        headers, body = self.push(subscriber, endpoint, plaintext)
        return http_request(endpoint, headers, body)


class MastodonAesgcm(Sender):
    """Mastodon's legacy subscriptions (every one before 4.4, and those made
    without `standard: true` since): aesgcm, draft VAPID."""

    name = "MastodonAesgcm"
    encoding = "aesgcm"
    ttl = 48 * 3600
    largest = 1200
    overhead = 18
    does = staticmethod(mastodon_does)

    def audience(self, endpoint):
        # Addressable's normalized_site: the port only when not the default.
        return origin(endpoint).lower()

    def jwt(self, endpoint):
        # A fresh JWT for every push (WebPushRequest#encoded_json_web_token),
        # 24 hours ahead, typ first as ruby-jwt writes the header.
        return self.vapid.jwt({"typ": "JWT", "alg": "ES256"},
                              {"aud": self.audience(endpoint), "exp": int(time.time()) + 24 * 3600,
                               "sub": "mailto:admin@mastodon.test"})

    def common_headers(self):
        return [("User-Agent", "Mastodon/4.4.0 (http.rb/5.2.0; +https://mastodon.test/)"),
                ("Date", formatdate(usegmt=True)),
                ("Content-Type", "application/octet-stream"),
                ("Ttl", str(self.ttl)),
                ("Urgency", "normal")]

    def unsubscribe_url(self):
        return ("Unsubscribe-URL", f"https://mastodon.test/api/web/push_subscriptions/{b64url(os.urandom(24))}")

    def push(self, subscriber, endpoint, plaintext):
        ciphertext, salt, dh = encrypt_aesgcm(plaintext, subscriber.public_key, subscriber.auth)
        headers = self.common_headers() + [
            ("Content-Encoding", "aesgcm"),
            ("Encryption", f"salt={b64url(salt)}"),
            ("Crypto-Key", f"dh={b64url(dh)};p256ecdsa={b64url(self.vapid.public)}"),
            ("Authorization", f"WebPush {self.jwt(endpoint)}"),
            self.unsubscribe_url(),
        ]
        return headers, ciphertext

    def notification(self, length=None):
        # Web::NotificationSerializer: the body truncated to 140 characters,
        # the title from the display name (at most 30 characters).
        def make(text):
            return json.dumps({
                "access_token": "Yx3kV2mS9fQpL7wRz0aBcDeFgHiJkLmNoPqRsTuVwXy",
                "preferred_locale": "en",
                "notification_id": 113904421907223771,
                "notification_type": "mention",
                "icon": "https://files.mastodon.test/accounts/avatars/109/348/246/original/a1b2c3d4e5f6.png",
                "title": "Ana 🐘 mentioned you",
                "body": "@you " + ("héllo 🐘 " * 14 if text is None else text),
            }, ensure_ascii=False, separators=(",", ":")).encode()
        return _fill(make, length)


class MastodonAes128gcm(MastodonAesgcm):
    """Mastodon 4.4's standard subscriptions (RFC 8291 aes128gcm, RFC 8292
    `vapid t=…,k=…` with no space after the comma)."""

    name = "MastodonAes128gcm"
    encoding = "aes128gcm"
    library_limit = 3993  # Webpush::Encryption refuses a longer message
    overhead = AES128GCM_HEADER_BYTES + 1 + 16

    def push(self, subscriber, endpoint, plaintext):
        if len(plaintext) > self.library_limit:
            raise ValueError("message is too big")
        body = encrypt_aes128gcm(plaintext, subscriber.public_key, subscriber.auth, rs=4096)
        headers = self.common_headers() + [
            ("Content-Encoding", "aes128gcm"),
            ("Authorization", f"vapid t={self.jwt(endpoint)},k={b64url(self.vapid.public)}"),
            self.unsubscribe_url(),
            ("Content-Length", str(len(body))),
        ]
        return headers, body


class Pleroma(Sender):
    """Pleroma.Web.Push.Impl through web_push_encryption 0.3.1: aesgcm, no
    padding, `TTL: 0`, draft VAPID with `aud` = scheme://host (the port
    dropped), a JWT 12 hours ahead; no Urgency, no Content-Type."""

    name = "Pleroma"
    encoding = "aesgcm"
    ttl = 0
    largest = 1000
    library_limit = 4078  # WebPushEncryption.Encrypt's @max_payload_length
    overhead = 18
    user_agent = "Pleroma 2.9.1; https://pleroma.test <admin@pleroma.test>"
    does = staticmethod(pleroma_does)

    def audience(self, endpoint):
        return origin(endpoint, keep_port=False)

    def push(self, subscriber, endpoint, plaintext):
        if len(plaintext) > self.library_limit:
            raise ValueError("Payload is too large")
        ciphertext, salt, dh = encrypt_aesgcm(plaintext, subscriber.public_key, subscriber.auth)
        # JOSE signs with {"alg":"ES256"} and adds typ; claims in map order.
        token = self.vapid.jwt({"alg": "ES256", "typ": "JWT"},
                               {"aud": self.audience(endpoint), "exp": int(time.time()) + 12 * 3600,
                                "sub": "mailto:admin@pleroma.test"})
        # The headers map, listed by Map.to_list (sorted), then the client's.
        headers = [
            ("Authorization", f"WebPush {token}"),
            ("Content-Encoding", "aesgcm"),
            ("Crypto-Key", f"dh={b64url(dh)};p256ecdsa={b64url(self.vapid.public)}"),
            ("Encryption", f"salt={b64url(salt)}"),
            ("TTL", str(self.ttl)),
            ("user-agent", self.user_agent),
        ]
        return headers, ciphertext

    def notification(self, length=None):
        # Jason writes the map's keys sorted; the body is scrubbed and
        # truncated to 140 characters.
        def make(text):
            return json.dumps({
                "access_token": "kJ2n8Qz5wXc1vB7mN4pL0rT6yU3iO9aSdFgHjKlZxCv",
                "body": "@ana@pleroma.test: " + ("ça va ? ✨ " * 12 if text is None else text),
                "icon": "https://pleroma.test/media/6f1b0c2e-avatar.png",
                "notification_id": "4821",
                "notification_type": "mention",
                "pleroma": {"activity_id": "AbCdEfGhIjKlMnOpQr", "direct_conversation_id": None},
                "preferred_locale": "en",
                "title": "New Mention",
            }, ensure_ascii=False, separators=(",", ":")).encode()
        return _fill(make, length)


class Akkoma(Pleroma):
    """Akkoma keeps Pleroma's Push.Impl and web_push_encryption unchanged."""

    name = "Akkoma"
    user_agent = "Akkoma 3.15.2; https://akkoma.test <admin@akkoma.test>"


class GoToSocial(Sender):
    """realsender.go through webpush-go 1.4.0: aes128gcm with a record size
    of 2048 and the record padded to it, so every body is exactly 2048
    bytes; `vapid t=…, k=…`; `aud` = scheme://host[:port as written];
    sub = https://<host>; TTL 48 hours; no Urgency or Topic."""

    name = "GoToSocial"
    encoding = "aes128gcm"
    ttl = 48 * 3600
    record_size = 2048
    library_limit = record_size - 16 - AES128GCM_HEADER_BYTES - 1  # webpush-go's ErrMaxPadExceeded
    largest = library_limit
    overhead = None  # every body is record_size bytes
    does = staticmethod(gotosocial_does)

    def audience(self, endpoint):
        return origin(endpoint, keep_default_port=True)

    def push(self, subscriber, endpoint, plaintext):
        if len(plaintext) > self.library_limit:
            raise ValueError("payload has exceeded the maximum length")
        # webpush-go pads message + 0x02 to (rs - 16) minus the header.
        pad = self.record_size - 16 - AES128GCM_HEADER_BYTES - len(plaintext) - 1
        body = encrypt_aes128gcm(plaintext, subscriber.public_key, subscriber.auth, rs=self.record_size, pad=pad)
        token = self.vapid.jwt({"alg": "ES256", "typ": "JWT"},
                               {"aud": self.audience(endpoint), "exp": int(time.time()) + 12 * 3600,
                                "sub": "https://gts.test"})
        # Go writes header names canonically (TTL becomes Ttl).
        headers = [
            ("User-Agent", "gotosocial (+https://gts.test) gotosocial/0.20.0"),
            ("Content-Encoding", "aes128gcm"),
            ("Content-Type", "application/octet-stream"),
            ("Ttl", str(self.ttl)),
            ("Authorization", f"vapid t={token}, k={b64url(self.vapid.public)}"),
            ("Accept-Encoding", "gzip"),
        ]
        return headers, body

    def notification(self, length=None):
        # apimodel.WebPushNotification; the body cut at 1500 bytes
        # (formatNotificationBody's bodyMaxLen).
        def make(text):
            return json.dumps({
                "access_token": "ZTQ0NDVJNJYTODQ4MC0ZNZQ2LWE5NJATYJU3MDM5NZUXOGU0",
                "preferred_locale": "en",
                "notification_id": "01JQ4G1N7V8W9X0Y1Z2A3B4C5D",
                "notification_type": "mention",
                "icon": "https://gts.test/fileserver/01HX/attachment/original/01HY.png",
                "title": "Ana mentioned you",
                "body": "hello from the slothverse 🦥 " * 4 if text is None else text,
            }, separators=(",", ":")).encode()
        return _fill(make, length)


class Misskey(Sender):
    """PushNotificationService.ts through web-push 3.6.7 (http_ece 1.2.1):
    aes128gcm at rs 4096 without padding, `vapid t=…, k=…`, `aud` =
    protocol//host (the port as written), sub = the server's URL, a JWT 12
    hours ahead, TTL 4 weeks (web-push's default), `Urgency: normal`. The
    whole packed notification goes in, so bodies run to kilobytes."""

    name = "Misskey"
    encoding = "aes128gcm"
    ttl = 2419200
    overhead = AES128GCM_HEADER_BYTES + 1 + 16
    largest = 4096 - overhead  # no truncation of its own: RFC 8030's 4096 bytes of body
    does = staticmethod(misskey_does)

    def audience(self, endpoint):
        return origin(endpoint, keep_default_port=True)

    def push(self, subscriber, endpoint, plaintext):
        body = encrypt_aes128gcm(plaintext, subscriber.public_key, subscriber.auth, rs=4096)
        token = self.vapid.jwt({"typ": "JWT", "alg": "ES256"},
                               {"aud": self.audience(endpoint), "exp": int(time.time()) + 12 * 3600,
                                "sub": "https://misskey.test"})
        headers = [
            ("TTL", str(self.ttl)),
            ("Content-Length", str(len(body))),
            ("Content-Type", "application/octet-stream"),
            ("Content-Encoding", "aes128gcm"),
            ("Authorization", f"vapid t={token}, k={b64url(self.vapid.public)}"),
            ("Urgency", "normal"),
        ]
        return headers, body

    def notification(self, length=None):
        # {type, body: the packed Notification with its note summarized,
        # userId, dateTime}; a note's files and the notifier's emojis and
        # badge roles make it long.
        def make(text):
            note = {
                "id": "9xk2m4p7q1", "createdAt": "2025-06-01T12:00:00.000Z", "userId": "9abc1def2g",
                "text": "今日もいい天気 ☀️ " * 3 if text is None else text,
                "visibility": "public", "localOnly": False, "reactionAcceptance": None,
                "renoteCount": 0, "repliesCount": 0, "reactionCount": 0, "reactions": {}, "reactionEmojis": {},
                "fileIds": ["9xk2m4a001"],
                "files": [{"id": "9xk2m4a001", "createdAt": "2025-06-01T11:59:58.000Z", "name": "sky.webp",
                           "type": "image/webp", "md5": "0f343b0931126a20f133d67c2b018a3b", "size": 48213,
                           "isSensitive": False, "blurhash": "eEF~3|of00ay~qj[D%j[ofj[",
                           "properties": {"width": 1280, "height": 960},
                           "url": "https://misskey.test/files/webpublic-8a1c9d9e-4f3b.webp",
                           "thumbnailUrl": "https://misskey.test/files/thumbnail-8a1c9d9e-4f3b.webp",
                           "comment": None, "folderId": None, "userId": None, "user": None}],
                "replyId": None, "renoteId": None, "clippedCount": 0,
            }
            notifier = {"id": "9abc1def2g", "name": "あな :blobcat:", "username": "ana", "host": None,
                        "avatarUrl": "https://misskey.test/proxy/avatar.webp?url=https%3A%2F%2Fmisskey.test"
                                     "%2Ffiles%2F1b2c3d&avatar=1",
                        "avatarBlurhash": "eQG8mWof00j[~qj[ayj[fQfQ", "avatarDecorations": [],
                        "isBot": False, "isCat": True,
                        "emojis": {"blobcat": "https://misskey.test/emoji/blobcat.webp"},
                        "onlineStatus": "online", "badgeRoles": []}
            return json.dumps({
                "type": "notification",
                "body": {"id": "9xk2m4q8aa", "createdAt": "2025-06-01T12:00:01.000Z", "type": "mention",
                         "isRead": False, "userId": "9abc1def2g", "user": notifier, "note": note},
                "userId": "9zz9yy8xx7",
                "dateTime": 1748779201000,
            }, ensure_ascii=False, separators=(",", ":")).encode()
        return _fill(make, length)


class Sharkey(Misskey):
    """Sharkey keeps Misskey's PushNotificationService and web-push."""

    name = "Sharkey"


ALL = [MastodonAesgcm, MastodonAes128gcm, Pleroma, Akkoma, GoToSocial, Misskey, Sharkey]
