"""Helpers for the provider API's end-to-end tests: the API
listener's port, requests with an API key, what the emulator received for a
token, and a local HTTP server that records what it is sent (the feedback
hook's receiver)."""

import base64
import http.server
import json
import os
import threading
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import relaytest as rt

# Keys are at least 16 bytes (API_KEYS' rule).
ALL_APPS_KEY = "all-apps-key-0123456789abcdef"
LIVE_ONLY_KEY = "live-only-key-0123456789abcdef"
LIVE_TOPIC = "com.example.app.push-type.liveactivity"  # gorush README's Live Activity example
LIVE_KEY_ID = "LIVEKEY123"
TEAM = "TEAMID6789"


# The relay's peak RSS after hostile requests (bounded memory):
# a 10 MB body is refused at API_MAX_BODY_BYTES (1 MiB) and nothing decoded
# grows past it. Sanitizer builds keep shadow memory (test_abuse.py): the
# bound is scaled for them, never dropped. AddressSanitizer also keeps freed
# memory in its quarantine (256 MiB by default on 64-bit): the module's relay,
# which has carried 1,000-token requests by then, peaked at 418–461 MiB under
# it in a CI run, over 3 × 128 MiB; so 3 × 128 MiB plus the quarantine.
_SANITIZER = os.environ.get("TOOT_RELAY_SANITIZER", "")
RSS_BOUND_KIB = {"": 128, "address": 3 * 128 + 256, "thread": 5 * 128}[_SANITIZER] * 1024


def assert_bounded_memory(process):
    peak = rt.rss_kib(process.popen.pid)[1]
    assert peak <= RSS_BOUND_KIB, f"relay peak RSS {peak} KiB"


_serial = [0x7000_0000]


def fresh_token():
    """A plain token no other provider API test uses."""
    _serial[0] += 1
    return rt.plain_token(_serial[0])


def fresh_fault(code):
    """A fault token (relaytest.fault_token) no other provider API test uses."""
    _serial[0] += 1
    return rt.fault_token(code, _serial[0])


def write_apps_file(path, tables):
    """An apps file from (table name, {key: value}) pairs: `[[name]]` and one
    `key = value` line each (JSON's strings, booleans and arrays of strings
    are TOML's too)."""
    lines = []
    for name, fields in tables:
        lines.append(f"[[{name}]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
        lines.append("")
    with open(path, "w") as handle:
        handle.write("\n".join(lines))


def backend_provider_key(directory):
    """A P-256 key of a backend's own (an `[[api-key]]`'s `jwt-public-key`):
    the private key, and the path of its public half's PEM in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    path = os.path.join(directory, "backend-public.pem")
    with open(path, "wb") as handle:
        handle.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, path


def team_emulators(certs, workdir, name):
    """A production and a development emulator that take the test client
    certificate and the team's key (LIVE_KEY_ID, TEAM)."""
    team_key = ("--provider-key", f"key-id={LIVE_KEY_ID},team-id={TEAM},"
                                  f"public-key={os.path.join(certs, 'authkey-public.pem')}")
    production = rt.start_emulator(certs, workdir, name=f"{name}-production", extra=team_key)
    development = rt.start_emulator(certs, workdir, name=f"{name}-development",
                                    extra=team_key + ("--environment", "development"))
    return production, development


def team_token_app(certs):
    """An app table's credential: the team's .p8 key."""
    return {"p8-file": os.path.join(certs, "authkey.p8"), "key-id": LIVE_KEY_ID, "team-id": TEAM}


def api_port(process, timeout=20):
    """The API listener's port: the stdout line `api on HOST:PORT` after
    `listening on …`. Read in a thread so a relay that never prints it
    fails the test after `timeout` instead of hanging it."""
    lines = []
    reader = threading.Thread(target=lambda: lines.append(process.popen.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    text = lines[0].decode().strip() if lines else ""
    if not text.startswith("api on "):
        raise AssertionError(f"no `api on` line on stdout: {text!r}; log: {process.read_log()[-2000:]}")
    return int(text.rsplit(":", 1)[1])


def start_api_relay(env, workdir, name, beside=()):
    """A relay with its API listener, and that listener's port; when it does
    not come up, it and the processes `beside` it (its emulators) are
    killed before the failure is raised."""
    relay = rt.start_relay(env, workdir, name=name)
    try:
        return relay, api_port(relay)
    except AssertionError:
        for process in (relay, *beside):
            process.kill()
        raise


def bearer(key=ALL_APPS_KEY):
    return [("Authorization", f"Bearer {key}")]


def basic(user, password):
    return [("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())]


def request(port, method, path, body=b"", headers=(), timeout=30):
    """One request on its own connection; a body sent in full even when the
    server answers and closes early (then its answer is still read)."""
    if isinstance(body, str):
        body = body.encode()
    client = rt.Client(port, timeout=timeout)
    try:
        try:
            client.send(rt.request_bytes(method, path, list(headers), body))
        except (BrokenPipeError, ConnectionResetError):
            pass
        return client.response(head_only=(method == "HEAD"))
    finally:
        client.close()


def push(port, document, headers=None, timeout=30):
    """POST /api/push with a JSON document (text sent as is, else dumped)."""
    body = document if isinstance(document, (str, bytes)) else json.dumps(document)
    return request(port, "POST", "/api/push", body,
                   [("Content-Type", "application/json")] + (bearer() if headers is None else list(headers)),
                   timeout=timeout)


def json_body(response):
    return json.loads(response.body)


def received_for(emulator, token, count=1, timeout=5):
    """The emulator's recorded entries for `token`, waiting until `count` arrived."""
    deadline = time.monotonic() + timeout
    while True:
        entries = [entry for entry in rt.recorded(emulator) if entry["token"] == token]
        if len(entries) >= count or time.monotonic() > deadline:
            return entries
        time.sleep(0.02)


def send_dead(port, count, key=ALL_APPS_KEY):
    """`count` tokens the emulator refuses with 410 Unregistered, through
    /api/push on `port` (answered after APNs: each is recorded and logged
    as failed); returns them."""
    tokens = [fresh_fault(0x01) for _ in range(count)]
    response = push(port, {"notifications": [{"tokens": tokens, "platform": 1, "message": "x"}]},
                    headers=bearer(key))
    assert response.status == 200, response
    assert len(json_body(response)["logs"]) == count
    return tokens


def apns_headers(entry):
    """The apns-* headers the emulator received (the ones gorush/apns2
    decide; authorization, content-type and pseudo-headers are transport)."""
    return {name: value for name, value in entry["headers"] if name.startswith("apns-")}


def total_recorded(*emulators):
    return sum(len(rt.recorded(emulator)) for emulator in emulators)


def metric(text, prefix):
    """{series: value} for the exposition lines starting with `prefix`."""
    values = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            series, _, value = line.rpartition(" ")
            values[series] = float(value)
    return values


class HookServer:
    """Python's http.server on 127.0.0.1 port 0 in a thread: records every
    POST (path, headers, body) and answers `status` (200 unless a test
    sets another), recording that too."""

    def __init__(self, status=200):
        self.status = status
        self.received = []
        self.statuses = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with outer.lock:
                    status = outer.status
                    outer.received.append((self.path, dict(self.headers.items()), body))
                    outer.statuses.append(status)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/feedback"

    def delivered(self):
        """{token: how many of its posts were answered 200}."""
        with self.lock:
            counts = {}
            for (_, _, body), status in zip(self.received, self.statuses):
                if status == 200:
                    token = json.loads(body).get("token")
                    counts[token] = counts.get(token, 0) + 1
            return counts

    def posts_for(self, token):
        with self.lock:
            return [(headers, json.loads(body)) for _, headers, body in self.received
                    if json.loads(body).get("token") == token]

    def wait_for(self, tokens, timeout=15):
        """Waits until every token has at least one post; returns {token: [posts]}."""
        deadline = time.monotonic() + timeout
        while True:
            found = {token: self.posts_for(token) for token in tokens}
            if all(found.values()) or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
