# paddock-server (and the paddock client) with what its bubblewrap sandbox
# needs (bubblewrap, git, ext4 volumes), and the sandbox pods' image, which
# holds the client alone (its kube executor links nothing of the server).
# Both are release builds: -trimpath, stripped. Used by
# deploy/kubernetes/paddock.yaml:
#   docker build -t ghcr.io/paddock-dev/paddock:latest .
#   docker build --target sandbox -t ghcr.io/paddock-dev/paddock-sandbox:latest .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/paddock ./cmd/paddock-server

# A sandbox pod: `paddock kube executor` as a user with no privilege, bash,
# git and what commands commonly need; add the agents' toolchains.
FROM debian:trixie-slim AS sandbox
RUN apt-get update && apt-get install -y --no-install-recommends \
      bash git ca-certificates procps \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/paddock /usr/local/bin/paddock
USER 65532:65532

FROM debian:trixie-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      bubblewrap git e2fsprogs mount procps ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/paddock /out/paddock-server /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/paddock-server"]
CMD ["serve"]
