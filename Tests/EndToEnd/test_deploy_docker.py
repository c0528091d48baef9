"""The Docker home: scripts/check-docker (which scripts/test runs) holds the
Dockerfile against the release build; here, that it catches a broken
Dockerfile, and that the Heroku and Fly files agree with the image."""

import os
import re
import subprocess
import tomllib

import pytest

import relaytest as rt

CHECK = os.path.join(rt.ROOT, "scripts", "check-docker")
RELEASE = os.path.join(rt.ROOT, ".build", "release", "toot-relay")


def dockerfile():
    with open(os.path.join(rt.ROOT, "Dockerfile"), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.skipif(not os.path.exists(RELEASE), reason="no release build (scripts/check-docker makes it)")
@pytest.mark.parametrize("change, finding", [
    # libxml2: no other runtime package depends on it (libnghttp2-14, say,
    # comes with libcurl4 anyway, which check-docker accepts).
    (lambda text: text.replace(" libxml2 ", " "),
     "libxml2.so.2 (/lib/x86_64-linux-gnu/libxml2.so.2) comes from libxml2"),
    (lambda text: text.replace(" libssl3 ", " libssl3 libnghttp2-15 "), "package libnghttp2-15 does not exist in bookworm"),
    (lambda text: text.replace("USER toot-relay\n", ""), "the runtime stage does not switch to a non-root USER"),
    (lambda text: text.replace("EXPOSE 42069", "EXPOSE 8080"), "does not match ENV PORT=42069"),
    (lambda text: text.replace("FROM debian:bookworm-slim", "FROM debian:bullseye-slim"), "not debian:bookworm-slim"),
    (lambda text: text.replace("/relay-to/_health", "/nowhere"), "HEALTHCHECK failed against the running relay"),
    # SwiftPM's first complaint names whichever Tests/ target it checks first.
    (lambda text: text.replace("COPY Tests ./Tests\n", ""),
     "SwiftPM cannot load the package the build stage copies: error: "),
], ids=["missing-library", "unknown-package", "root", "port", "base-image", "healthcheck", "build-context"])
def test_check_docker_finds_what_is_wrong(tmp_path, change, finding):
    broken = tmp_path / "Dockerfile"
    text = change(dockerfile())
    assert text != dockerfile()
    broken.write_text(text)
    result = subprocess.run([CHECK], env={**os.environ, "DOCKERFILE": str(broken), "CHECK_DOCKER_REUSE_BUILD": "1"}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 1, result
    assert finding in result.stderr, result.stderr


def test_heroku_yml_builds_the_dockerfile_and_runs_the_relay():
    with open(os.path.join(rt.ROOT, "config", "heroku.yml"), encoding="utf-8") as handle:
        text = handle.read()
    # The whole file, without a YAML library: two sections, one process each.
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert lines == ["build:", "  docker:", "    web: Dockerfile", "run:", "  web: toot-relay"]
    assert "P12_BASE64" in text


def test_fly_toml_matches_the_image():
    with open(os.path.join(rt.ROOT, "config", "fly.toml"), "rb") as handle:
        fly = tomllib.load(handle)
    port = int(fly["env"]["PORT"])
    assert fly["http_service"]["internal_port"] == port
    checks = fly["http_service"]["checks"]
    assert [check["path"] for check in checks] == ["/relay-to/_health"]
    assert fly["kill_signal"] == "SIGTERM"
    assert int(fly["kill_timeout"].rstrip("s")) > 10
    # Secrets are never in the file.
    assert not any(key in fly["env"] for key in ("P12_BASE64", "P12_PASSWORD", "TOKEN_AUTH_KEY_FILENAME"))


def test_dockerfile_cmd_is_the_relay_with_the_platform_environment():
    text = dockerfile()
    assert re.search(r'^CMD \["toot-relay"\]$', text, re.MULTILINE)
    assert "ENV PORT=42069" in text and "P12_BASE64" in text
