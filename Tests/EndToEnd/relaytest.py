"""Helpers for the end-to-end tests: processes, a raw HTTP/1.1 client, a
Web Push sender shaped like Mastodon's, and an extended-z85 decoder."""

import base64
import json
import os
import re
import select
import signal
import socket
import subprocess
import time
import urllib.request

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
import http_ece
import py_vapid
import pytest
import pywebpush

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TOOT_RELAY_BUILD", os.path.join(ROOT, ".build", "debug"))
RELAY = os.path.join(BUILD, "toot-relay")
EMULATOR = os.path.join(BUILD, "apns-emulator")

TOKEN = "0123456789abcdef" * 4
TOPIC = "com.example.tootrelay.test"


# MARK: processes

class Process:
    """A child process whose first stdout line is `listening on HOST:PORT`."""

    def __init__(self, argv, env=None, log_path=None, start_timeout=20, pass_fds=()):
        self.log_path = log_path
        self.log = open(log_path, "wb") if log_path else subprocess.DEVNULL
        self.popen = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=self.log, pass_fds=pass_fds)
        self.port = None
        # Bounded: wait for the first line with select, never in a bare
        # readline on a process that might print nothing.
        line = b""
        ready, _, _ = select.select([self.popen.stdout], [], [], start_timeout)
        if ready:
            line = self.popen.stdout.readline()
        text = line.decode().strip()
        if not text.startswith("listening on "):
            self.kill()
            raise RuntimeError(f"{argv[0]} did not start: {text!r}; log: {self.read_log()}")
        self.port = int(text.rsplit(":", 1)[1])

    def read_log(self):
        if not self.log_path:
            return ""
        with open(self.log_path, "rb") as handle:
            return handle.read().decode(errors="replace")

    def log_contains(self, needle, timeout=5):
        """Whether the log shows `needle` within `timeout` seconds (lines
        written just after the first stdout line may lag behind it)."""
        deadline = time.monotonic() + timeout
        while needle not in self.read_log():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def signal(self, number):
        if self.popen.poll() is None:
            os.kill(self.popen.pid, number)

    def wait(self, timeout):
        return self.popen.wait(timeout=timeout)

    def kill(self):
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        if self.popen.stdout:
            self.popen.stdout.close()
        if self.log is not subprocess.DEVNULL:
            self.log.close()


def free_port():
    """A 127.0.0.1 port nothing listens on now (bound, then closed): for
    servers that take no port 0, and for an address nothing answers on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RefusingPort:
    """A 127.0.0.1 port that refuses connections for as long as the `with`
    lasts: bound by a socket that never listens, so no other process can
    take it meanwhile (a port `free_port` found free may be bound again by
    the time a relay connects, and answer something else)."""

    def __enter__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        return self.socket.getsockname()[1]

    def __exit__(self, *exc):
        self.socket.close()
        return False


def require_tool(path, package):
    """Skips without `path` on a developer's machine; fails in CI (CI=true),
    where scripts/setup has installed Debian's `package`."""
    if os.path.exists(path):
        return
    message = f"{path} missing (scripts/setup installs Debian's {package})"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def wait_for_port(port, process=None, timeout=10, what="server"):
    """Waits (bounded) until something accepts on 127.0.0.1:`port`; fails
    at once if `process` (a Popen) exits meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"{what} exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")
            time.sleep(0.02)


def metrics_port(relay):
    """The port of a relay started with METRICS_PORT=0, from its log."""
    assert relay.log_contains("metrics on 127.0.0.1:"), relay.read_log()
    return int(re.search(r"metrics on 127\.0\.0\.1:(\d+)", relay.read_log()).group(1))


def scrape(port):
    """The exposition text of the metrics listener on `port`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        return response.read().decode()


def metric_value(text, series):
    """The value of `series` (name and labels as exposed) in `text`, or None."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def start_emulator(certs, workdir, name="emulator", extra=(), port=None, fcm_service_accounts=(),
                   fcm_token_lifetime=None, fcm_revoked_keys=False):
    """The emulator as APNs, and as FCM too when given service-account files
    (`write_service_account`: their token_uri names `port`, so pick it
    first with `free_port`). FCM's accepted messages go to their own record
    file (`fcm_recorded`); `fcm_revoked_keys`: start with the revocation
    file that `revoke_fcm_keys` rewrites at run time."""
    record = os.path.join(workdir, f"{name}.jsonl")
    open(record, "w").close()
    argv = [EMULATOR, "--certificate", os.path.join(certs, "server.pem"), "--key", os.path.join(certs, "server.key"),
            "--client-ca", os.path.join(certs, "ca.pem"), "--record", record]
    if port is not None:
        argv += ["--port", str(port)]
    fcm_record = revoked = None
    if fcm_service_accounts:
        fcm_record = os.path.join(workdir, f"{name}-fcm.jsonl")
        open(fcm_record, "w").close()
        argv += ["--fcm-record", fcm_record]
        for account in fcm_service_accounts:
            argv += ["--fcm-service-account", account]
        if fcm_token_lifetime is not None:
            argv += ["--fcm-token-lifetime", str(fcm_token_lifetime)]
        if fcm_revoked_keys:
            revoked = os.path.join(workdir, f"{name}-fcm-revoked.txt")
            open(revoked, "w").close()
            argv += ["--fcm-revoked-keys", revoked]
    process = Process([*argv, *extra], log_path=os.path.join(workdir, f"{name}.log"))
    process.record = record
    process.fcm_record = fcm_record
    process.fcm_revoked_keys = revoked
    return process


FCM_PROJECT = "toot-relay-test"
FCM_KEY_ID = "0123456789abcdef0123456789abcdef01234567"
FCM_CLIENT_EMAIL = "firebase-adminsdk-e2e@toot-relay-test.iam.gserviceaccount.com"
# The FCM emulator's fault tokens (FCMFaultToken in Sources/APNsEmulator/FCMFaults.swift):
# the marker, two hex digits, then any token characters.
FCM_TOKEN = "cXyzAbc123:APA91bE2eTestToken-_0123456789"


def fcm_fault_token(code, filler=""):
    return f"fa11fa11{code:02x}:APA91b{filler}" + "x" * 40


def write_service_account(path, certs, port, project_id=FCM_PROJECT, key_id=FCM_KEY_ID,
                          client_email=FCM_CLIENT_EMAIL, key_file="service-account.p8"):
    """A service account's JSON file as the Firebase console writes it, for
    the test RSA key (scripts/make-test-certs), its token_uri the emulator's
    token endpoint on 127.0.0.1:`port`. Returns `path`."""
    with open(os.path.join(certs, key_file), "r", encoding="ascii") as handle:
        private_key = handle.read()
    account = {
        "type": "service_account",
        "project_id": project_id,
        "private_key_id": key_id,
        "private_key": private_key,
        "client_email": client_email,
        "client_id": "123456789012345678901",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": f"https://127.0.0.1:{port}/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "universe_domain": "googleapis.com",
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(account, handle, indent=2)
    return path


def fcm_token_requests(emulator):
    """How many access tokens the emulator issued and how many token
    requests it refused so far, from its log (one line each)."""
    log = emulator.read_log()
    return log.count("FCM access token issued to "), log.count("FCM token request refused: ")


def revoke_fcm_keys(emulator, key_ids):
    """Makes the emulator's token endpoint refuse these private_key_ids
    (400 invalid_grant) from now on; an empty list revokes none. The
    emulator must have been started with fcm_revoked_keys=True."""
    with open(emulator.fcm_revoked_keys, "w", encoding="utf-8") as handle:
        handle.write("".join(f"{key_id}\n" for key_id in key_ids))
    emulator.signal(signal.SIGHUP)
    if not emulator.log_contains(f"FCM keys revoked: {sorted(key_ids)!r}".replace("'", '"')):
        raise AssertionError(f"the emulator did not take the revocation of {key_ids}")


def relay_environment(certs, apns_port, **overrides):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PORT": "0",
        "BIND": "127.0.0.1",
        "P12_FILENAME": os.path.join(certs, "client.p12"),
        "P12_PASSWORD": "secret",
        "CA_FILENAME": os.path.join(certs, "ca.pem"),
        "APNS_PRODUCTION_HOST": f"127.0.0.1:{apns_port}",
        "APNS_DEVELOPMENT_HOST": f"127.0.0.1:{apns_port}",
        "CRT_FILENAME": os.path.join(certs, "no-such-file.crt"),
        "LOG_LEVEL": "info",
        "THREADS": "2",
    }
    # scripts/sanitize: the sanitized relay gets the same sanitizer options
    # (suppressions, leak checking) as the test processes.
    for key in ("ASAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS", "SWIFT_BACKTRACE"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.update({key: str(value) for key, value in overrides.items()})
    return env


def start_relay(env, workdir, name="relay", args=()):
    return Process([RELAY, *args], env=env, log_path=os.path.join(workdir, f"{name}.log"))


def record_entries(emulator, record=None):
    """The emulator's record file (or `record`), one dictionary a complete
    line. The emulator writes while tests read: a last line without its
    newline is still being written and is left for the next read."""
    with open(record or emulator.record, "r", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.endswith("\n") and line.strip()]


def fcm_recorded(emulator, token=None, timeout=5):
    """The FCM messages the emulator accepted (all, or the first for
    `token`, waited for): `token`, `project`, `name`, `account`, `key_id`,
    `access_token_fingerprint` (which access token it came with),
    `message` (as sent: `message["data"]` holds p/k/s/x), `headers`."""
    deadline = time.monotonic() + timeout
    while True:
        entries = record_entries(emulator, emulator.fcm_record)
        if token is None:
            return entries
        for entry in entries:
            if entry.get("token") == token:
                return entry
        if time.monotonic() > deadline:
            raise AssertionError(f"the FCM emulator never received a message for {token}")
        time.sleep(0.02)


def recorded(emulator, apns_id=None, timeout=5):
    """The emulator's recorded notifications (all, or the one with apns_id)."""
    deadline = time.monotonic() + timeout
    while True:
        entries = record_entries(emulator)
        if apns_id is None:
            return entries
        for entry in entries:
            if entry["apns_id"] == apns_id:
                return entry
        if time.monotonic() > deadline:
            raise AssertionError(f"emulator never received {apns_id}")
        time.sleep(0.02)


# MARK: raw HTTP/1.1

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def __repr__(self):
        return f"Response({self.status}, {self.headers}, {self.body!r})"


class Client:
    """One keep-alive connection; reads Content-Length framed responses.
    `tls`: an `ssl.SSLContext` to speak HTTPS with (server name localhost)."""

    def __init__(self, port, timeout=10, tls=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if tls is not None:
            try:
                self.sock = tls.wrap_socket(self.sock, server_hostname="localhost")
            except BaseException:
                self.sock.close()
                raise
        self.buffer = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def response(self, head_only=False):
        while b"\r\n\r\n" not in self.buffer:
            if not self._fill():
                raise EOFError("connection closed before a response")
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = []
        for line in lines[1:]:
            key, _, value = line.partition(":")
            headers.append((key.strip(), value.strip()))
        length = 0
        for key, value in headers:
            if key.lower() == "content-length":
                length = int(value)
        if status < 200 or head_only:
            length = 0
        self.buffer = rest
        while len(self.buffer) < length:
            if not self._fill():
                raise EOFError("connection closed inside a body")
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return Response(status, headers, body)

    def closed_by_peer(self):
        """True when the server closed the connection (EOF or reset)."""
        if self.buffer:
            return False
        try:
            return not self._fill()
        except ConnectionResetError:
            return True


def request_bytes(method, path, headers=(), body=b"", http="HTTP/1.1"):
    lines = [f"{method} {path} {http}", "Host: relay.test"]
    lines += [f"{key}: {value}" for key, value in headers]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def health_request():
    return request_bytes("GET", "/relay-to/_health")


# MARK: Web Push, as Mastodon sends it

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Subscriber:
    """An iOS app's Web Push subscription: a P-256 key pair and auth secret."""

    def __init__(self):
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.public_key = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        self.auth = os.urandom(16)

    def subscription(self, endpoint):
        return {"endpoint": endpoint, "keys": {"p256dh": b64url(self.public_key), "auth": b64url(self.auth)}}


_VAPID = py_vapid.Vapid01()
_VAPID.generate_keys()
_VAPID02 = py_vapid.Vapid02()
_VAPID02.generate_keys()


def mastodon_push(subscriber, endpoint, plaintext, encoding="aesgcm", ttl=172800, urgency="normal", topic=None):
    """The body and headers Mastodon's webpush gem sends, encrypted by
    pywebpush/http_ece for `subscriber`."""
    pusher = pywebpush.WebPusher(subscriber.subscription(endpoint))
    encoded = pusher.encode(plaintext, content_encoding=encoding)
    claims = {"aud": "https://relay.test", "sub": "mailto:admin@mastodon.test", "exp": int(time.time()) + 43200}
    headers = [("Content-Type", "application/octet-stream"), ("Content-Encoding", encoding), ("TTL", str(ttl)),
               ("Urgency", urgency)]
    if encoding == "aesgcm":
        vapid = _VAPID.sign(dict(claims))
        headers.append(("Crypto-Key", f"dh={encoded['crypto_key'].decode()};{vapid['Crypto-Key']}"))
        headers.append(("Encryption", f"salt={encoded['salt'].decode()}"))
        headers.append(("Authorization", vapid["Authorization"]))
    else:
        vapid = _VAPID02.sign(dict(claims))
        headers.append(("Authorization", vapid["Authorization"]))
    headers.append(("Unsubscribe-URL", "https://mastodon.test/api/web/push_subscriptions/42/unsubscribe"))
    if topic:
        headers.append(("Topic", topic))
    return encoded["body"], headers


# MARK: extended z85 (WIRE.md §2.1)

Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {character: index for index, character in enumerate(Z85_ALPHABET)}


def z85_decode(text):
    """5 digits → 4 bytes; a trailing 2, 3 or 4 digits → 1, 2 or 3 bytes."""
    out = bytearray()
    full, rest = divmod(len(text), 5)
    if rest == 1:
        raise ValueError("z85 text cannot end with a single digit")
    for index in range(full + (1 if rest else 0)):
        group = text[index * 5:index * 5 + 5]
        value = 0
        for character in group:
            value = value * 85 + _Z85_VALUE[character]
        size = 4 if len(group) == 5 else len(group) - 1
        if value >= 1 << (8 * size):
            raise ValueError(f"z85 group {group!r} out of range")
        out += value.to_bytes(size, "big")
    return bytes(out)


def decrypt_notification(payload, subscriber):
    """What the iOS app does with the APNs payload: decode p/k/s, decrypt."""
    body = z85_decode(payload["p"])
    if "k" in payload:
        return http_ece.decrypt(body, salt=z85_decode(payload["s"]), dh=z85_decode(payload["k"]),
                                private_key=subscriber.private_key, auth_secret=subscriber.auth, version="aesgcm")
    return http_ece.decrypt(body, private_key=subscriber.private_key, auth_secret=subscriber.auth,
                            version="aes128gcm")


def decrypt_metatext_notification(payload, subscriber):
    """What Metatext and Feditext do with metatext-apns' payload: `m` is the
    body in padded base64url; for aesgcm, `s` and `k` are the salt and dh the
    sender wrote; aes128gcm carries them in `m`'s own header."""
    body = base64.urlsafe_b64decode(payload["m"])
    if "k" in payload:
        return http_ece.decrypt(body, salt=b64url_decode(payload["s"]), dh=b64url_decode(payload["k"]),
                                private_key=subscriber.private_key, auth_secret=subscriber.auth, version="aesgcm")
    return http_ece.decrypt(body, private_key=subscriber.private_key, auth_secret=subscriber.auth,
                            version="aes128gcm")


def fault_token(code, filler=0):
    """A token that makes the emulator produce fault `code` (see FaultInjection.swift)."""
    filler_text = format(filler, "x")
    return "fa11fa11" + format(code, "02x") + "0" * (64 - 10 - len(filler_text)) + filler_text


# MARK: load and the ledger (fault matrix, abuse, long run)

def plain_token(index):
    """A distinct ordinary 64-digit token (never the fault marker)."""
    return format(index, "064x")


def prepared_push(plaintext=b"ledger", encoding="aesgcm"):
    """One Mastodon-shaped encrypted body and its headers; the path is not
    part of the encryption, so they can be sent to any token."""
    body, headers = mastodon_push(Subscriber(), "https://relay.test/relay-to/production/" + TOKEN, plaintext,
                                  encoding=encoding)
    return body, headers


class Outcome:
    """One request as the sender saw it: the status (None when the
    connection failed before an answer) and the apns-id of a 201."""

    def __init__(self, token, status, apns_id=None, error=None, elapsed=0.0):
        self.token = token
        self.status = status
        self.apns_id = apns_id
        self.error = error
        self.elapsed = elapsed

    def __repr__(self):
        return f"Outcome({self.token[:12]}…, {self.status}, {self.apns_id}, {self.error})"


def send_all(port, tokens, threads=8, body_headers=None, deadline_seconds=60, timeout=15, pause=0.0,
             prefix="/relay-to/production/"):
    """Sends one POST per token (to `prefix` + token) over `threads`
    keep-alive connections (a new connection after a close or an error);
    returns the outcomes. Bounded: stops sending once `deadline_seconds`
    have passed."""
    import threading
    body, headers = body_headers or prepared_push()
    outcomes = []
    lock = threading.Lock()
    queue = list(tokens)
    deadline = time.monotonic() + deadline_seconds

    def worker():
        client = None
        while time.monotonic() < deadline:
            with lock:
                if not queue:
                    break
                token = queue.pop()
            started = time.monotonic()
            try:
                if client is None:
                    client = Client(port, timeout=timeout)
                client.send(request_bytes("POST", prefix + token, headers, body))
                response = client.response()
            except (OSError, EOFError) as error:
                outcome = Outcome(token, None, error=repr(error), elapsed=time.monotonic() - started)
                if client is not None:
                    client.close()
                client = None
            else:
                apns_id = None
                if response.status == 201:
                    apns_id = response.header("Location").rsplit("/", 1)[1]
                outcome = Outcome(token, response.status, apns_id, elapsed=time.monotonic() - started)
                if (response.header("Connection") or "").lower() == "close":
                    client.close()
                    client = None
            with lock:
                outcomes.append(outcome)
            if pause:
                time.sleep(pause)
        if client is not None:
            client.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=deadline_seconds + timeout + 5)
    return outcomes


def check_ledger(outcomes, accepted, allowed_4xx=(), exact=True):
    """The reliability ledger (RELIABILITY.md): every 201 was accepted by the
    emulator exactly once; nothing the emulator did not accept got a 2xx; no
    4xx except `allowed_4xx`. `exact`: also nothing accepted without a 201
    (false where a lost answer may legitimately leave an accepted
    notification behind a 5xx, which Mastodon retries)."""
    accepted_ids = [entry["apns_id"] for entry in accepted]
    assert len(accepted_ids) == len(set(accepted_ids)), "the emulator accepted an apns-id twice"
    created = [outcome.apns_id for outcome in outcomes if outcome.status == 201]
    assert len(created) == len(set(created)), "two 201s carry the same apns-id"
    assert all(outcome.status is None or not 200 <= outcome.status < 300 or outcome.status == 201
               for outcome in outcomes), "a 2xx other than 201"
    missing = set(created) - set(accepted_ids)
    assert not missing, f"{len(missing)} answered 201 but never accepted by APNs"
    bad_4xx = [outcome for outcome in outcomes
               if outcome.status is not None and 400 <= outcome.status < 500 and outcome.status not in allowed_4xx]
    assert not bad_4xx, f"4xx not allowed here: {bad_4xx[:5]}"
    if exact:
        extra = set(accepted_ids) - set(created)
        assert not extra, f"{len(extra)} accepted by APNs without a 201"
    return {"sent": len(outcomes), "201": len(created), "accepted": len(accepted_ids),
            "statuses": status_histogram(outcomes)}


def status_histogram(outcomes):
    histogram = {}
    for outcome in outcomes:
        histogram[outcome.status] = histogram.get(outcome.status, 0) + 1
    return histogram


def stop_emulator_and_read_stats(emulator, timeout=10):
    """SIGTERM the emulator; returns its stats line (on stderr at exit)."""
    emulator.signal(signal.SIGTERM)
    emulator.wait(timeout=timeout)
    for line in reversed(emulator.read_log().splitlines()):
        if "stopped: received" in line:
            return line
    return ""


def stat_value(stats_line, name):
    """`accepted 12` in the emulator's stats line → 12."""
    for field in stats_line.partition("stopped: ")[2].split(", "):
        key, _, value = field.strip().rpartition(" ")
        if key == name and value.isdigit():
            return int(value)
    raise AssertionError(f"no {name!r} in {stats_line!r}")


def rss_kib(pid):
    """(VmRSS, VmHWM) of a process in KiB, from /proc."""
    values = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values.get("VmRSS", 0), values.get("VmHWM", 0)
