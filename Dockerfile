# The paddock binary with what its sandbox needs (bubblewrap, git, ext4
# volumes). Used by deploy/kubernetes/paddock.yaml:
#   docker build -t ghcr.io/paddock-dev/paddock:latest .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /paddock ./cmd/paddock

FROM debian:trixie-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      bubblewrap git e2fsprogs mount procps ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /paddock /usr/local/bin/paddock
ENTRYPOINT ["/usr/local/bin/paddock"]
CMD ["serve"]
