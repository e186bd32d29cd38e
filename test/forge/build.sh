#!/usr/bin/env bash
# Builds the Gitea the forge tests run (internal/forge/forgetest), from the
# Go module proxy, into DIR (default /var/cache/paddock-gitea): its binary
# (without web assets: its API and git over HTTP need none) and its
# options (locales), which such a build reads from disk. Cached: a second
# run does nothing. About 15 minutes cold on two cores.
set -euo pipefail
version=1.27.3
dir=${1:-/var/cache/paddock-gitea}
mkdir -p "$dir"
if [ -x "$dir/gitea-$version" ] && [ -d "$dir/src-$version/options" ]; then
  exit 0
fi
src=$(go mod download -json "code.gitea.io/gitea@v$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
mkdir -p "$dir/src-$version"
cp -r "$src/options" "$dir/src-$version/"
chmod -R u+w "$dir/src-$version"
(cd "$src" && go build -trimpath -tags 'sqlite sqlite_unlock_notify' -ldflags "-X main.Version=$version" -o "$dir/gitea-$version.new" .)
mv "$dir/gitea-$version.new" "$dir/gitea-$version"
