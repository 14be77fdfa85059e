# wait-for-idp: a static binary in an otherwise empty image.
#
# Multi-arch: `docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 .` builds each
# platform natively (QEMU for the foreign ones); TARGETARCH picks the Rust target: musl for amd64
# and arm64, glibc linked fully static for arm (v7), which has no prebuilt musl standard library
# here. deploy/push-image does this and pushes the three. ppc64le and s390x build the same way but
# come out over the 2.0 MiB budget (docs/release.md, "Architectures"), so they are refused here. TARGETARCH is declared without a default on purpose: BuildKit takes a
# default over the platform's value, and every image would get the amd64 binary. buildah and
# podman set it from --platform as BuildKit does.
#
# BIN_STAGE chooses where the binary comes from: `builder` compiles it here (the default);
# `prebuilt` copies dist/${TARGETARCH}/wait-for-idp and dist/${TARGETARCH}/licenses (what
# deploy/licenses writes) from the build context (how CI tests the final stage on a machine
# without a container registry). The unused stage is never built.
ARG BIN_STAGE=builder

FROM rust:1.95.0-slim-bookworm AS builder
ARG TARGETARCH
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# musl-gcc for ring's C and assembly; the version is pinned with the base image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools=1.2.3-1 \
 && rm -rf /var/lib/apt/lists/*
# The build context has no .git: `--build-arg WAIT_FOR_IDP_COMMIT=$(git rev-parse HEAD)` names the
# commit in --version (build.rs), else it says "unknown".
ARG WAIT_FOR_IDP_COMMIT=unknown
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs LICENSE ./
COPY .cargo .cargo
COPY src src
COPY deploy/licenses deploy/licenses
RUN case "${TARGETARCH}" in \
      amd64) triple=x86_64-unknown-linux-musl ;; \
      arm64) triple=aarch64-unknown-linux-musl ;; \
      arm) triple=armv7-unknown-linux-gnueabihf ;; \
      ppc64le|s390x) echo "${TARGETARCH}: over the 2.0 MiB budget as a static glibc binary, not shipped (docs/release.md)" >&2; exit 1 ;; \
      *) echo "unsupported TARGETARCH ${TARGETARCH}" >&2; exit 1 ;; \
    esac \
 && rustup target add "${triple}" \
 && cargo build --release --locked --target "${triple}" \
 && cp "target/${triple}/release/wait-for-idp" /wait-for-idp \
 && deploy/licenses --target "${triple}" /licenses

FROM scratch AS prebuilt
ARG TARGETARCH
COPY dist/${TARGETARCH}/wait-for-idp /wait-for-idp
COPY dist/${TARGETARCH}/licenses /licenses

# hadolint ignore=DL3006
FROM ${BIN_STAGE} AS bin

FROM scratch
# deploy/push-image sets these: the commit, and SOURCE_DATE_EPOCH (default: the commit's time)
# in RFC 3339, never the build's own clock, so a rebuild of the same commit is the same image. A
# plain build says "unknown" and the epoch (as ko does) rather than a time that would differ, and
# "unknown" for its source rather than an example URL (deploy/push-image gives the repository's).
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
ARG IMAGE_SOURCE=unknown
LABEL org.opencontainers.image.title="wait-for-idp" \
      org.opencontainers.image.description="Init container that waits until an OpenID Connect issuer really serves its metadata" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${IMAGE_SOURCE}"
COPY --from=bin /wait-for-idp /wait-for-idp
# The licences of what the binary links: its own, and each crate's texts (deploy/licenses).
COPY --from=bin /licenses /licenses
USER 65532:65532
ENTRYPOINT ["/wait-for-idp"]
