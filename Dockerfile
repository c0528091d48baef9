# toot-relay: build with Swift on Debian bookworm, run on bookworm-slim.
#   docker build -t toot-relay .
#   docker run -p 42069:42069 -e P12_BASE64="$(base64 -w0 toot-relay.p12)" -e P12_PASSWORD=... toot-relay
# scripts/check-docker checks this file against a real release build
# (no Docker engine needed): every library the binary links comes from a
# package installed below, and every package exists in bookworm.

FROM swift:6.3-bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pkg-config libnghttp2-dev libssl-dev libxml2-dev libhiredis-dev \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libcurl4-openssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# SwiftPM refuses a manifest whose test targets have no directory, even to
# build one product; the same holds for the fuzzing targets under Fuzz/
# (FuzzSupport, apps-file-fuzzer) and the es256-verify benchmark.
COPY Tests ./Tests
COPY Fuzz ./Fuzz
COPY Benchmarks/es256-verify ./Benchmarks/es256-verify
# The Swift standard library and Foundation are linked in statically, so the
# runtime stage needs no Swift runtime files.
RUN swift build -c release --product toot-relay --static-swift-stdlib \
    && install -D -m 755 "$(swift build -c release --product toot-relay --static-swift-stdlib --show-bin-path)/toot-relay" /out/toot-relay

FROM debian:bookworm-slim
# The libraries the binary links (see scripts/check-docker) and the system
# CA roots APNs is verified against (no CA bundle is pinned: Apple changed
# its server CA in 2025). libc6, libgcc-s1 and libstdc++6 are already in the
# base image; naming them keeps this list complete. libxml2 (the XML-RPC
# decoder) links libicu72, liblzma5 and zlib1g, named for the same reason;
# libcurl4 (the feedback hook) brings two dozen libraries apt installs with it;
# libhiredis0.14 is Redis' reply reader (REDIS_URL).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libc6 libgcc-s1 libstdc++6 libnghttp2-14 libssl3 libxml2 libicu72 liblzma5 zlib1g libhiredis0.14 ca-certificates \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libcurl4 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/toot-relay /usr/local/bin/toot-relay
RUN useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin toot-relay
USER toot-relay
WORKDIR /tmp
# PORT as Heroku and Fly set it; the credentials come as P12_BASE64 and
# P12_PASSWORD (or the TOKEN_* variables) from the platform's secrets.
ENV PORT=42069
EXPOSE 42069
# bash's /dev/tcp: no HTTP client in the image. The platform terminates TLS,
# so the relay speaks plain HTTP here.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-42069} && printf 'GET /relay-to/_health HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
STOPSIGNAL SIGTERM
CMD ["toot-relay"]
