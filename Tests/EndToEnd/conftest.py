import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relaytest  # noqa: E402


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("certs"))
    subprocess.run([os.path.join(relaytest.ROOT, "scripts", "make-test-certs"), directory], check=True, timeout=120)
    return directory


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def emulator(certs, workdir):
    process = relaytest.start_emulator(certs, workdir, name=f"emulator-{os.getpid()}-{id(certs)}")
    yield process
    process.kill()


@pytest.fixture(scope="module")
def relay(certs, workdir, emulator):
    env = relaytest.relay_environment(certs, emulator.port, APNS_TIMEOUT=2)
    process = relaytest.start_relay(env, workdir)
    yield process
    process.kill()


@pytest.fixture
def spawn(certs, workdir):
    """Starts extra emulators/relays for one test; kills them afterwards."""
    started = []

    class Spawner:
        def emulator(self, name, *extra):
            process = relaytest.start_emulator(certs, workdir, name=name, extra=extra)
            started.append(process)
            return process

        def relay(self, name, apns_port, args=(), **overrides):
            process = relaytest.start_relay(relaytest.relay_environment(certs, apns_port, **overrides), workdir,
                                            name=name, args=args)
            started.append(process)
            return process

    yield Spawner()
    for process in started:
        process.kill()


@pytest.fixture(scope="session", autouse=True)
def no_sanitizer_reports(workdir):
    """Under scripts/sanitize the relay and emulator are sanitized builds: a
    report in any of their logs fails the run, even one from a process a
    test killed before it could exit non-zero."""
    yield
    reports = []
    for name in sorted(os.listdir(workdir)):
        if name.endswith(".log"):
            with open(os.path.join(workdir, name), "rb") as handle:
                text = handle.read().decode(errors="replace")
            if "Sanitizer:" in text or "runtime error:" in text:
                reports.append(name)
    assert not reports, f"sanitizer reports in {reports} (under {workdir})"
