"""Debian's nginx running a site file of the repository's (config/) for a
test: the site is rendered with only addresses, certificate and log paths
replaced, wrapped in what Debian's /etc/nginx/nginx.conf provides around a
site, with every path inside the test's directory; `nginx -t` checks it
first. The master is stopped by its PID."""

import os
import shutil
import signal
import subprocess

import requests

import relaytest as rt

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def render(site_path, substitutions):
    """The site file with each (old, new, count) substitution made; each
    `old` must occur exactly `count` times, so the file's logic is what runs."""
    with open(site_path, encoding="utf-8") as handle:
        text = handle.read()
    for old, new, count in substitutions:
        assert text.count(old) == count, f"{old!r} is not in {os.path.basename(site_path)} {count} times"
        text = text.replace(old, new)
    return text


def terminate(process, timeout=10):
    """SIGTERM a child by its PID and wait; SIGKILL if it does not exit."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


class NginxServer:
    """nginx with `site_text` as its only site, listening on `ports` (waited
    for before the constructor returns)."""

    def __init__(self, directory, site_text, ports, worker_connections=256):
        rt.require_tool(NGINX, "nginx")
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        site = self.path("site.conf")
        with open(site, "w", encoding="utf-8") as handle:
            handle.write(site_text)
        conf = self.path("nginx.conf")
        with open(conf, "w", encoding="utf-8") as handle:
            handle.write(f"""
daemon off;
worker_processes 1;
{"user root;" if os.geteuid() == 0 else ""}
pid {self.path("nginx.pid")};
error_log {self.path("error.log")} info;
events {{ worker_connections {worker_connections}; }}
http {{
    access_log off;
    client_body_temp_path {self.path("client_body")};
    proxy_temp_path {self.path("proxy")};
    fastcgi_temp_path {self.path("fastcgi")};
    uwsgi_temp_path {self.path("uwsgi")};
    scgi_temp_path {self.path("scgi")};
    include {site};
}}
""")
        arguments = ["-c", conf, "-p", directory, "-e", self.path("error.log")]
        checked = subprocess.run([NGINX, "-t", *arguments], capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr
        self.process = subprocess.Popen([NGINX, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for port in ports:
            rt.wait_for_port(port, self.process, what="nginx")

    def path(self, name):
        return os.path.join(self.directory, name)

    def error_log(self):
        with open(self.path("error.log"), encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def access_log(self, name="access.log"):
        if not os.path.exists(self.path(name)):
            return ""
        with open(self.path(name), encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def stop(self):
        terminate(self.process)


def https_session(certs):
    """A requests session that trusts the throwaway CA only (not
    REQUESTS_CA_BUNDLE from the environment)."""
    session = requests.Session()
    session.trust_env = False
    session.verify = os.path.join(certs, "ca.pem")
    return session
