#!/usr/bin/env bash
# Installs one Go tool at a pinned version into the cache outside the clone and prints its path.
# Usage: hack/tool.sh <name> <package> <version>. Skips the build when that version is already there.
set -euo pipefail
name=$1 pkg=$2 version=$3
CACHE_ROOT="${DNSPOLICY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dnspolicy-controller}"
bin="$CACHE_ROOT/bin/$name-$version"
if [ ! -x "$bin" ]; then
  echo "hack/tool: installing $name $version (once)" >&2
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install "$pkg@$version" >&2
  mkdir -p "$CACHE_ROOT/bin"
  # go install names the binary after the last path element that is not a major version (/v5).
  base=$(basename "$pkg")
  [[ "$base" =~ ^v[0-9]+$ ]] && base=$(basename "$(dirname "$pkg")")
  mv "$tmp/$base" "$bin"
  rm -rf "$tmp"
fi
echo "$bin"
