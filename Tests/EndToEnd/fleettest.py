"""Helpers for the tests of several instances sharing one Redis: a real
`redis-server` of the test's own (127.0.0.1, a free port, append-only,
killed by PID), a fake Redis that answers what a test tells it to, Debian's
nginx running config/nginx-toot-relay-fleet.conf in front of the
instances, and the instances themselves."""

import os
import signal
import socket
import subprocess
import threading
import time


import nginxserver as ns
import relaytest as rt

REDIS_SERVER = "/usr/bin/redis-server"
REDIS_CLI = "/usr/bin/redis-cli"
FLEET_SITE = os.path.join(rt.ROOT, "config", "nginx-toot-relay-fleet.conf")

# How much slower a sanitized relay runs (scripts/sanitize sets
# TOOT_RELAY_SANITIZER): the fleet tests' waits stretch by it and their
# loads shrink by it, so a run proves the same in a time CI allows.
SLOW = {"": 1, "address": 3, "thread": 5}[os.environ.get("TOOT_RELAY_SANITIZER", "")]


class RedisProcess:
    """`redis-server` on 127.0.0.1 at a free port, its files in `directory`,
    `appendonly yes` with `appendfsync always` (what is acknowledged is on
    disk), no snapshots. `restart()` brings it back on the same port and
    files; `stop()` and `kill()` signal only the process it started."""

    def __init__(self, directory, password=None, config=None):
        rt.require_tool(REDIS_SERVER, "redis-server")
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.port = rt.free_port()
        self.password = password
        # A redis.conf read first; the arguments below win over it.
        self.config = config
        self.process = None
        self.start()

    @property
    def url(self):
        userinfo = f":{self.password}@" if self.password else ""
        return f"redis://{userinfo}127.0.0.1:{self.port}/0"

    def start(self):
        argv = [REDIS_SERVER, *([self.config] if self.config else []),
                "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.directory,
                "--save", "", "--appendonly", "yes", "--appendfsync", "always",
                "--logfile", os.path.join(self.directory, "redis.log"), "--daemonize", "no"]
        if self.password:
            argv += ["--requirepass", self.password]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rt.wait_for_port(self.port, self.process, what="redis-server")
        # Accepting is not serving: while it loads its append-only file
        # Redis answers -LOADING; INFO is answered meanwhile.
        deadline = time.monotonic() + 30
        while "loading:0" not in self.cli("INFO", "persistence"):
            assert time.monotonic() < deadline, "redis-server still loading after 30 s"
            time.sleep(0.02)

    def cli(self, *arguments, timeout=10):
        """One command through redis-cli; its output, stripped."""
        argv = [REDIS_CLI, "-h", "127.0.0.1", "-p", str(self.port), "--no-auth-warning"]
        if self.password:
            argv += ["-a", self.password]
        done = subprocess.run(argv + [str(a) for a in arguments], capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def stop(self):
        ns.terminate(self.process)

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def restart(self):
        self.stop()
        self.start()


class FakeRedis:
    """A TCP server on 127.0.0.1 that answers every connection with
    `answer(received_bytes) -> bytes | None` (None: say nothing), for the
    relay's side of a Redis that answers garbage, errors or nothing."""

    def __init__(self, answer):
        self.answer = answer
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def _serve(self):
        self.listener.settimeout(0.2)
        while not self.stopping:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._talk, args=(connection,), daemon=True).start()

    def _talk(self, connection):
        connection.settimeout(0.5)
        with connection:
            while not self.stopping:
                try:
                    data = connection.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not data:
                    return
                reply = self.answer(data)
                if reply:
                    try:
                        connection.sendall(reply)
                    except OSError:
                        return

    def stop(self):
        self.stopping = True
        self.listener.close()
        self.thread.join(timeout=5)


def render_fleet_site(certs, directory, webpush_ports, api_ports, https_port, api_https_port):
    """The fleet site with only addresses, certificate and log paths replaced."""
    def servers(ports):
        return "".join(f"    server 127.0.0.1:{port} max_fails=0;\n" for port in ports)

    return ns.render(FLEET_SITE, [
        ("    server 10.0.0.11:42069 max_fails=0;\n    server 10.0.0.12:42069 max_fails=0;\n"
         "    server 10.0.0.13:42069 max_fails=0;\n", servers(webpush_ports), 1),
        ("    server 10.0.0.11:8080 max_fails=0;\n    server 10.0.0.12:8080 max_fails=0;\n"
         "    server 10.0.0.13:8080 max_fails=0;\n", servers(api_ports), 1),
        ("    listen 443 ssl;\n", f"    listen 127.0.0.1:{https_port} ssl;\n", 1),
        ("    listen [::]:443 ssl;\n", "", 1),
        ("    listen 8443 ssl;\n", f"    listen 127.0.0.1:{api_https_port} ssl;\n", 1),
        ("    listen [::]:8443 ssl;\n", "", 1),
        ("/etc/letsencrypt/live/relay.example.com/fullchain.pem", os.path.join(certs, "server-chain.pem"), 2),
        ("/etc/letsencrypt/live/relay.example.com/privkey.pem", os.path.join(certs, "server.key"), 2),
        ("/var/log/nginx/toot-relay.access.log", os.path.join(directory, "access.log"), 1),
        ("/var/log/nginx/toot-relay-api.access.log", os.path.join(directory, "api-access.log"), 1),
    ])


class FleetNginx(ns.NginxServer):
    """nginx in front of the instances with the fleet site: HTTPS for Web
    Push on `https_port`, for the provider API on `api_port`."""

    def __init__(self, certs, directory, webpush_ports, api_ports):
        self.https_port, self.api_port = rt.free_port(), rt.free_port()
        super().__init__(directory, render_fleet_site(certs, directory, webpush_ports, api_ports, self.https_port,
                                                      self.api_port),
                         [self.https_port, self.api_port], worker_connections=1024)


class Instance:
    """One relay of a fleet: its Web Push and API ports stay the same
    across restarts (nginx's upstreams name them)."""

    def __init__(self, certs, workdir, apns_port, name, redis_url, **overrides):
        self.certs, self.workdir, self.name = certs, workdir, name
        self.port, self.api_port = rt.free_port(), rt.free_port()
        self.environment = rt.relay_environment(
            certs, apns_port, PORT=self.port, API_PORT=self.api_port, METRICS_PORT=0, **overrides)
        if redis_url is not None:
            self.environment["REDIS_URL"] = redis_url
        self.starts = 0
        self.process = None
        self.start()

    def start(self):
        self.starts += 1
        self.process = rt.start_relay(self.environment, self.workdir, name=f"{self.name}-{self.starts}")
        assert self.process.port == self.port
        rt.wait_for_port(self.api_port, self.process.popen, what=self.name)

    def metrics(self):
        return rt.scrape(rt.metrics_port(self.process))

    def stop(self, timeout=30):
        """SIGTERM, and wait for the exit."""
        self.process.signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self.process.kill()
        return code

    def kill(self):
        self.process.kill()

    def restart(self):
        self.stop()
        self.start()


def start_instances(certs, workdir, apns_port, redis_url, count=3, **overrides):
    return [Instance(certs, workdir, apns_port, f"relay-{index}", redis_url, **overrides) for index in range(count)]


def wait_connected(instance, timeout=10):
    """Waits until the instance's commands link to Redis is up (its metric)."""
    deadline = time.monotonic() + timeout * SLOW
    while rt.metric_value(instance.metrics(), 'toot_relay_redis_connected{link="commands"}') != 1:
        assert time.monotonic() < deadline, instance.process.read_log()[-2000:]
        time.sleep(0.1)


def consumer_pending(redis):
    """{consumer: entries pending} of the async stream's group."""
    text = redis.cli("XINFO", "CONSUMERS", "toot-relay:async", "relays")
    fields = text.split("\n")
    pending = {}
    for index, field in enumerate(fields):
        if field == "name":
            name = fields[index + 1]
        if field == "pending":
            pending[name] = int(fields[index + 1])
    return pending


def instance_name(instance):
    """The instance's consumer name, from its start-up line."""
    assert instance.process.log_contains("fleet: instance ")
    log = instance.process.read_log()
    return log.split("fleet: instance ", 1)[1].split(",", 1)[0]
