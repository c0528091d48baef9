"""Helpers for the tests of config/prometheus and config/grafana: Debian's
`prometheus` and `promtool` (scripts/setup installs them), and a Prometheus
server of the test's own: 127.0.0.1 on a free port, its storage in a
temporary directory, a one-second scrape, killed by PID. It never touches a
system Prometheus (Debian's package may run one on :9090)."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import relaytest as rt

RULES = os.path.join(rt.ROOT, "config", "prometheus", "toot-relay-alerts.yml")
RULE_TESTS = os.path.join(rt.ROOT, "config", "prometheus", "toot-relay-alerts.test.yml")
DASHBOARD = os.path.join(rt.ROOT, "config", "grafana", "toot-relay.json")


def alert_blocks():
    """{alert name: its text in the rules file} (no YAML library: the file's
    layout is fixed, one `- alert:` per rule)."""
    with open(RULES) as handle:
        text = handle.read()
    parts = re.split(r"^      - alert: ", text, flags=re.MULTILINE)[1:]
    return {part.split("\n", 1)[0].strip(): part for part in parts}


def tool(name):
    """The path of `name`; skips without it on a developer's machine, fails
    in CI (CI=true), where scripts/setup has installed it."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} missing (scripts/setup installs Debian's prometheus package)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


class PrometheusServer:
    """`prometheus` scraping `targets` (host:port) as the job `toot-relay`
    every second, evaluating `rule_files` every second."""

    def __init__(self, directory, targets, rule_files=(), start_timeout=20):
        binary = tool("prometheus")
        self.directory = directory
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w") as handle:
            # JSON is YAML: no YAML library needed.
            json.dump({
                "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
                "rule_files": list(rule_files),
                "scrape_configs": [{"job_name": "toot-relay", "static_configs": [{"targets": list(targets)}]}],
            }, handle)
        self.port = rt.free_port()
        self.log_path = os.path.join(directory, "prometheus.log")
        self.log = open(self.log_path, "wb")
        self.popen = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={os.path.join(directory, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=directory)
        deadline = time.monotonic() + start_timeout
        while not self._ready():
            if self.popen.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"prometheus did not start on 127.0.0.1:{self.port}: {self.read_log()}")
            time.sleep(0.1)

    def _ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def read_log(self):
        with open(self.log_path, "rb") as handle:
            return handle.read().decode(errors="replace")[-3000:]

    def api(self, path, **parameters):
        """GET /api/v1/<path>; the `data` of a success, else an AssertionError
        with Prometheus' error."""
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if parameters:
            url += "?" + urllib.parse.urlencode(parameters, doseq=True)
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        assert body.get("status") == "success", f"{path} {parameters}: {body.get('errorType')}: {body.get('error')}"
        return body["data"]

    def query(self, expr):
        """The instant vector of `expr` now: [(labels, value)]."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", (expr, data["resultType"])
        return [(sample["metric"], float(sample["value"][1])) for sample in data["result"]]

    def wait_for_scrapes(self, count, timeout=15):
        """Waits until every target has been scraped up `count` times in a
        row since the server started."""
        deadline = time.monotonic() + timeout
        while True:
            samples = self.query('count_over_time(up{job="toot-relay"}[1m]) and on(instance) up == 1')
            if samples and all(value >= count for _, value in samples):
                return
            assert time.monotonic() < deadline, f"fewer than {count} scrapes in {timeout} s: {samples}"
            time.sleep(0.2)

    def kill(self):
        if self.popen.poll() is None:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        self.log.close()
