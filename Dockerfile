# flowsnap as a container: a static binary on a distroless base, run as a
# user without rights, on a read-only root filesystem (it writes nothing).
#
#   docker build -t flowsnap .
#   docker run --read-only -p 8080:8080 \
#     -e FLOWSNAP_DB=postgres://flowsnap@db/engine -e FLOWSNAP_AUTH=tokens \
#     -e FLOWSNAP_TOKENS_FILE=/etc/flowsnap/tokens.json \
#     -v /srv/flowsnap/tokens.json:/etc/flowsnap/tokens.json:ro flowsnap
#
# The image listens on every interface, so `serve` refuses to start until
# FLOWSNAP_AUTH chooses tokens or jwt (or FLOWSNAP_ALLOW_UNAUTHENTICATED=true
# says a proxy in front authenticates). See docs/security.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The dashboard's built files (web/dist) are committed and embedded: no
# Node.js is needed here.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/flowsnap .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/flowsnap /usr/local/bin/flowsnap
# distroless's nonroot user; no shell, no package manager, no curl.
USER 65532:65532
ENV FLOWSNAP_ADDR=0.0.0.0:8080 \
    FLOWSNAP_LOG_FORMAT=json
EXPOSE 8080
# `flowsnap healthcheck` reads FLOWSNAP_ADDR (and FLOWSNAP_TLS_CERT) as
# serve does and asks /readyz on loopback.
HEALTHCHECK --interval=15s --timeout=6s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/flowsnap", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/flowsnap"]
CMD ["serve"]
