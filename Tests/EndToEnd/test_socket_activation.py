"""Restarts that drop nothing: the relay takes its listening sockets from
systemd (LISTEN_FDS, config/toot-relay.socket), so a restart queues new
connections in the kernel while the old process finishes what it accepted
and the new one starts; and its own TLS certificate reloads on SIGHUP.

systemd-socket-activate (Debian's systemd package) binds a socket, waits for
the first connection and execs the relay with it: the relay then holds the
only copy, so on its own it cannot carry a socket across restarts. systemd
keeps its copy in PID 1 and passes it to every new process; `SocketHolder`
does the same here (bind and listen once, then each start hands the socket
to a new process as descriptor 3), and it starts each process through
systemd-socket-activate, which passes a socket it was given on
(sd_listen_fds) with LISTEN_FDNAMES: every restart below is systemd's own
code handing the relay a socket."""

import datetime
import fcntl
import ipaddress
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import relaytest as rt

ACTIVATE = shutil.which("systemd-socket-activate")
needs_activate = pytest.mark.skipif(ACTIVATE is None, reason="systemd-socket-activate missing (scripts/setup installs systemd)")


class SocketHolder:
    """systemd's part for a .socket unit: the listening sockets, bound once
    and kept while processes come and go; each start hands them to a new
    process as descriptors 3, 4, … (`kinds`: "tcp", or hostile ones)."""

    def __init__(self, kinds=("tcp",), backlog=4096):
        self.sockets = []
        for kind in kinds:
            if kind == "udp":
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind(("127.0.0.1", 0))
            elif kind == "tcp-not-listening":
                sock = socket.socket()
                sock.bind(("127.0.0.1", 0))
            elif kind == "tcp-any":
                sock = socket.socket()
                sock.bind(("0.0.0.0", 0))
                sock.listen(backlog)
            else:
                sock = socket.socket()
                sock.bind(("127.0.0.1", 0))
                sock.listen(backlog)
            self.sockets.append(sock)
        # Copies numbered 100 and up, so moving them to 3, 4, … in the child
        # never overwrites one not moved yet.
        self.high = [fcntl.fcntl(sock.fileno(), fcntl.F_DUPFD_CLOEXEC, 100 + index)
                     for index, sock in enumerate(self.sockets)]
        self.port = self.sockets[0].getsockname()[1]

    def close(self):
        for fd in self.high:
            os.close(fd)
        for sock in self.sockets:
            sock.close()

    def argv(self, command, listen_fds=None):
        """`command` run with the sockets at 3, 4, … and LISTEN_PID its own
        pid (bash's `$$`, which exec keeps)."""
        moves = " ".join(f"{3 + index}<&{fd} {fd}<&-" for index, fd in enumerate(self.high))
        count = len(self.high) if listen_fds is None else listen_fds
        return ["bash", "-c", f'export LISTEN_PID=$$ LISTEN_FDS={count}; exec {moves}; exec "$@"', "bash", *command]

    def start_relay(self, env, workdir, name, fdnames="webpush", start_timeout=20):
        """The relay through systemd-socket-activate, which takes the sockets
        passed to it and execs the relay once a connection arrives."""
        flags = [f"--fdname={fdnames}"] + [f"--setenv={key}={value}" for key, value in env.items()]
        return rt.Process(self.argv([ACTIVATE, *flags, "--", rt.RELAY]), env={"PATH": env["PATH"]},
                          log_path=os.path.join(workdir, f"{name}.log"), start_timeout=start_timeout,
                          pass_fds=self.high)


def tls_environment(directory):
    return {"CRT_FILENAME": os.path.join(directory, "fullchain.pem"),
            "KEY_FILENAME": os.path.join(directory, "privkey.pem")}


def client_tls(certs):
    return ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))


class SteadyLoad:
    """Web Push senders sending until stopped, each request a new token:
    half open a connection per request (as a sender without a pool), half
    keep theirs open between requests (as Mastodon's request pool and
    nginx's upstream keepalive do), a new one after `Connection: close`.
    Every failure before an answer counts: none is retried."""

    def __init__(self, port, senders=8, tls=None, pause=0.005):
        self.port = port
        self.tls = tls
        self.pause = pause
        self.body, self.headers = rt.prepared_push()
        self.outcomes = []
        self.lock = threading.Lock()
        self.next_token = 0
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.sender, args=(index % 2 == 0,)) for index in range(senders)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in self.threads)
        return self.outcomes

    def sender(self, keep_alive):
        client = None
        while not self.stopping.is_set():
            with self.lock:
                token = rt.plain_token(self.next_token)
                self.next_token += 1
            headers = self.headers if keep_alive else [*self.headers, ("Connection", "close")]
            started = time.monotonic()
            try:
                if client is None:
                    client = rt.Client(self.port, timeout=20, tls=self.tls)
                client.send(rt.request_bytes("POST", "/relay-to/production/" + token, headers, self.body))
                response = client.response()
            except (OSError, EOFError) as error:
                kind = "keep-alive" if keep_alive else "a connection per request"
                outcome = rt.Outcome(token, None, error=f"{kind}: {error!r}", elapsed=time.monotonic() - started)
                if client is not None:
                    client.close()
                client = None
            else:
                apns_id = response.header("Location").rsplit("/", 1)[1] if response.status == 201 else None
                outcome = rt.Outcome(token, response.status, apns_id, elapsed=time.monotonic() - started)
                if not keep_alive or (response.header("Connection") or "").lower() == "close":
                    client.close()
                    client = None
            with self.lock:
                self.outcomes.append(outcome)
            time.sleep(self.pause)
        if client is not None:
            client.close()


def check_nothing_dropped(outcomes, emulator):
    failed = [outcome for outcome in outcomes if outcome.status != 201]
    assert not failed, f"{len(failed)} of {len(outcomes)} not 201: {failed[:5]}"
    summary = rt.check_ledger(outcomes, rt.recorded(emulator))
    assert summary["201"] == summary["accepted"] == len(outcomes)
    return summary


# MARK: start-up on systemd's own sockets


@needs_activate
def test_the_relay_serves_on_the_sockets_systemd_socket_activate_binds(certs, workdir, emulator):
    ports = [rt.free_port() for _ in range(3)]
    env = rt.relay_environment(certs, emulator.port, API_PORT=ports[1], METRICS_PORT=ports[2])
    flags = [f"--listen=127.0.0.1:{port}" for port in ports] + ["--fdname=webpush:api:metrics"]
    flags += [f"--setenv={key}={value}" for key, value in env.items()]
    relay = None
    connected = []

    def connect_once_it_listens():
        # It execs the relay at the first connection, which waits in the
        # socket's backlog meanwhile and is the relay's first request.
        deadline = time.monotonic() + 20
        while not connected and time.monotonic() < deadline:
            try:
                connected.append(socket.create_connection(("127.0.0.1", ports[0]), timeout=20))
            except ConnectionRefusedError:
                time.sleep(0.01)

    connector = threading.Thread(target=connect_once_it_listens)
    connector.start()
    try:
        relay = rt.Process([ACTIVATE, *flags, "--", rt.RELAY], env={"PATH": env["PATH"]},
                           log_path=os.path.join(workdir, "relay-activate.log"))
        connector.join(timeout=25)
        assert relay.port == ports[0] and connected
        first = connected[0]
        first.sendall(rt.health_request())
        assert b" 200 " in first.recv(4096).split(b"\r\n")[0]
        first.close()
        api = rt.Client(ports[1])
        api.send(rt.request_bytes("GET", "/healthz"))
        assert api.response().status == 200
        metrics = rt.Client(ports[2])
        metrics.send(rt.request_bytes("GET", "/metrics"))
        assert b"toot_relay_sender_connections" in metrics.response().body
        for name, port in zip(["webpush", "api", "metrics"], ports):
            assert relay.log_contains(f"socket `{name}` from systemd: 127.0.0.1:{port}")
        assert relay.log_contains("every thread accepting on systemd's socket `webpush`")
        relay.signal(signal.SIGTERM)
        assert relay.wait(timeout=20) == 0
    finally:
        if relay is not None:
            relay.kill()


def run_with_sockets(holder, env, fdnames=None, listen_fds=None):
    """The relay started directly on `holder`'s sockets (LISTEN_FDNAMES
    `fdnames` unless None); its exit status and stderr lines."""
    if fdnames is not None:
        env = dict(env, LISTEN_FDNAMES=fdnames)
    result = subprocess.run(holder.argv([rt.RELAY], listen_fds=listen_fds), env=env, capture_output=True,
                            timeout=30, pass_fds=holder.high)
    return result.returncode, result.stderr.decode().strip().splitlines(), result.stdout


@pytest.mark.parametrize("kinds,fdnames,listen_fds,overrides,needle", [
    (("tcp",), "www", None, {}, "socket 3 is named \"www\"; the relay takes sockets named `webpush`, `api`, `metrics`: set FileDescriptorName="),
    (("tcp",), None, None, {}, "socket 3 is named \"unknown\""),
    (("tcp", "tcp"), "webpush", None, {}, "LISTEN_FDNAMES: 1 names for the 2 sockets of LISTEN_FDS"),
    (("tcp", "tcp"), "webpush:webpush", None, {}, "two sockets are named `webpush`"),
    (("tcp",), "webpush:api", 2, {"API_PORT": "1"}, "socket 4 (`api`): not"),
    (("tcp",), "webpush", "x", {}, "LISTEN_FDS: \"x\" is not a number of sockets"),
    (("tcp",), "webpush", 99999, {}, "LISTEN_FDS: 99999 sockets passed; the relay takes at most 3"),
    (("udp",), "webpush", None, {}, "socket 3 (`webpush`): not a stream socket"),
    (("tcp-not-listening",), "webpush", None, {}, "socket 3 (`webpush`): not listening"),
    (("tcp", "tcp"), "webpush:api", None, {}, "systemd passed a socket named `api` but API_PORT is not set"),
    (("tcp", "tcp"), "webpush:metrics", None, {}, "systemd passed a socket named `metrics` but METRICS_PORT is not set"),
    # A socket on every interface serves the API only with a key, as API_BIND would.
    (("tcp", "tcp-any"), "webpush:api", None, {"API_PORT": "1"}, "API_BIND: 0.0.0.0 is not a loopback address"),
])
def test_sockets_the_relay_cannot_use_are_one_line_and_exit_1(certs, kinds, fdnames, listen_fds, overrides, needle):
    holder = SocketHolder(kinds)
    try:
        env = rt.relay_environment(certs, 1, **overrides)
        status, lines, stdout = run_with_sockets(holder, env, fdnames, listen_fds)
    finally:
        holder.close()
    assert status == 1, lines
    failures = [line for line in lines if line.startswith("toot-relay: ")]
    assert len(failures) == 1 and lines[-1] == failures[0], lines
    assert needle in failures[0], failures[0]
    assert not any(" error " in line or " warning " in line for line in lines[:-1]), lines
    assert stdout == b""


def test_sockets_for_another_process_are_left_alone(certs, workdir, emulator):
    # LISTEN_PID names another process (the relay inherited the variables
    # from a parent that was socket-activated): the relay binds PORT itself.
    env = rt.relay_environment(certs, emulator.port, LISTEN_PID=1, LISTEN_FDS=1, LISTEN_FDNAMES="webpush")
    relay = rt.start_relay(env, workdir, name="relay-listen-pid-other")
    try:
        client = rt.Client(relay.port)
        client.send(rt.health_request())
        assert client.response().status == 200
        assert relay.log_contains("LISTEN_PID 1 is another process")
        assert relay.log_contains("SO_REUSEPORT on")
    finally:
        relay.kill()


# MARK: restarts under load


def restart_under_load(spawn, certs, workdir, name, extra_env, tls, restarts=5):
    emulator = spawn.emulator(f"{name}-emulator", "--delay-ms", "20")
    holder = SocketHolder()
    env = rt.relay_environment(certs, emulator.port, SHUTDOWN_GRACE=10, **extra_env)
    load = SteadyLoad(holder.port, senders=8, tls=tls)
    relays = []
    try:
        load.start()
        relays.append(holder.start_relay(env, workdir, f"{name}-0"))
        stops = []
        for restart in range(1, restarts + 1):
            time.sleep(1.0)
            # systemctl restart: SIGTERM, the old process drains and exits,
            # then the new one starts; the socket stays open throughout.
            started = time.monotonic()
            relays[-1].signal(signal.SIGTERM)
            assert relays[-1].wait(timeout=20) == 0
            relays.append(holder.start_relay(env, workdir, f"{name}-{restart}"))
            stops.append(time.monotonic() - started)
        time.sleep(1.0)
        outcomes = load.stop()
    finally:
        load.stopping.set()
        for relay in relays:
            relay.kill()
        holder.close()
    summary = check_nothing_dropped(outcomes, emulator)
    for relay in relays[:-1]:
        assert relay.log_contains("SIGTERM: stopping")
        assert "grace period over" not in relay.read_log()
    served = [relay.read_log().count("relay app=default") for relay in relays]
    # Every process served part of the load.
    assert all(count > 0 for count in served), served
    print(f"{name}: {summary['201']} delivered over {restarts} restarts, per process {served}, "
          f"restart gaps {[round(gap, 2) for gap in stops]} s, slowest answer "
          f"{max(outcome.elapsed for outcome in outcomes):.2f} s")
    return summary


@needs_activate
def test_five_restarts_under_load_drop_nothing(spawn, certs, workdir):
    summary = restart_under_load(spawn, certs, workdir, "restart-http", {}, tls=None)
    assert summary["201"] > 100


@needs_activate
def test_five_restarts_under_load_with_the_relays_own_tls_drop_nothing(spawn, certs, workdir, tmp_path):
    shutil.copy(os.path.join(certs, "server-chain.pem"), tmp_path / "fullchain.pem")
    shutil.copy(os.path.join(certs, "server.key"), tmp_path / "privkey.pem")
    summary = restart_under_load(spawn, certs, workdir, "restart-https", tls_environment(str(tmp_path)),
                                 tls=client_tls(certs))
    assert summary["201"] > 100


# MARK: the relay's own certificate, renewed


def renewed_certificate(certs, directory, serial, new_key):
    """A renewal as certbot makes one: the same names from the same CA, a new
    serial and validity, and a new key unless `new_key` is false. Written
    beside the live files, then moved over them (rename is atomic)."""
    with open(os.path.join(certs, "ca.key"), "rb") as handle:
        ca_key = serialization.load_pem_private_key(handle.read(), password=None)
    with open(os.path.join(certs, "ca.pem"), "rb") as handle:
        ca = x509.load_pem_x509_certificate(handle.read())
    if new_key:
        key = ec.generate_private_key(ec.SECP256R1())
    else:
        with open(os.path.join(directory, "privkey.pem"), "rb") as handle:
            key = serialization.load_pem_private_key(handle.read(), password=None)
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                   .issuer_name(ca.subject).public_key(key.public_key()).serial_number(serial)
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(days=90))
                   .add_extension(x509.SubjectAlternativeName([
                       x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
                   .sign(ca_key, hashes.SHA256()))
    pem = certificate.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    for name, data in [("privkey.pem", key_pem), ("fullchain.pem", pem)]:
        staged = os.path.join(directory, name + ".new")
        with open(staged, "wb") as handle:
            handle.write(data)
        os.replace(staged, os.path.join(directory, name))
    return certificate


def served_serial(port, certs):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with client_tls(certs).wrap_socket(sock, server_hostname="localhost") as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def test_sighup_reloads_the_relays_own_certificate_under_load(spawn, certs, workdir, tmp_path):
    shutil.copy(os.path.join(certs, "server-chain.pem"), tmp_path / "fullchain.pem")
    shutil.copy(os.path.join(certs, "server.key"), tmp_path / "privkey.pem")
    emulator = spawn.emulator("tls-reload-emulator", "--delay-ms", "20")
    relay = spawn.relay("tls-reload", emulator.port, **tls_environment(str(tmp_path)))
    original = served_serial(relay.port, certs)
    load = SteadyLoad(relay.port, senders=8, tls=client_tls(certs))
    try:
        load.start()
        for index, (serial, new_key) in enumerate([(0x5E1A1, False), (0x5E1A2, True)]):
            time.sleep(1.0)
            renewed_certificate(certs, str(tmp_path), serial, new_key)
            relay.signal(signal.SIGHUP)
            assert relay.log_contains("SIGHUP: CRT_FILENAME/KEY_FILENAME", timeout=10)
            deadline = time.monotonic() + 10
            while served_serial(relay.port, certs) != serial:
                assert time.monotonic() < deadline, "the renewed certificate is not served"
                time.sleep(0.05)
            # The loops may serve the new context before the main thread has
            # written its line: wait for the line (bounded), then count.
            line_by = time.monotonic() + 5
            while relay.read_log().count("reloaded: new connections get the certificate") < index + 1:
                assert time.monotonic() < line_by, "no reload line"
                time.sleep(0.05)
            assert relay.read_log().count("reloaded: new connections get the certificate") == index + 1
        # A broken renewal: the error line, and the last good certificate stays.
        time.sleep(0.5)
        with open(tmp_path / "fullchain.pem", "wb") as handle:
            handle.write(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
        relay.signal(signal.SIGHUP)
        assert relay.log_contains("did not load, the running certificate stays", timeout=10)
        assert served_serial(relay.port, certs) == 0x5E1A2
        time.sleep(1.0)
        outcomes = load.stop()
    finally:
        load.stopping.set()
    assert original not in (0x5E1A1, 0x5E1A2)
    summary = check_nothing_dropped(outcomes, emulator)
    assert summary["201"] > 100
    client = rt.Client(relay.port, tls=client_tls(certs))
    client.send(rt.health_request())
    assert client.response().status == 200
