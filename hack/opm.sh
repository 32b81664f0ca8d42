#!/usr/bin/env bash
# Builds opm (operator-registry's catalog tool) into the cache outside the clone and prints its path.
# `go install` of opm fails on these machines while it looks up the module's latest version, so it is
# built from a one-file wrapper module instead (TOOLCHAIN.md). Skips the build when that version is there.
set -euo pipefail
OPM_VERSION="${OPM_VERSION:-v1.60.0}"
CACHE_ROOT="${DNSPOLICY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dnspolicy-controller}"
bin="$CACHE_ROOT/bin/opm-$OPM_VERSION"
if [ ! -x "$bin" ]; then
  echo "hack/opm: building opm $OPM_VERSION (about 2 minutes, once)" >&2
  w=$(mktemp -d)
  cat >"$w/go.mod" <<MOD
module opmwrapper

go 1.26

require github.com/operator-framework/operator-registry $OPM_VERSION
MOD
  cat >"$w/tools.go" <<'SRC'
//go:build tools

package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
SRC
  mkdir -p "$CACHE_ROOT/bin"
  (cd "$w" && go mod tidy >&2 &&
    go build -trimpath -tags "json1 containers_image_openpgp" -o "$bin.tmp.$$" github.com/operator-framework/operator-registry/cmd/opm >&2)
  # A temporary name of its own: two makes building at once (two clones sharing the cache) must not
  # move each other's file.
  mv -f "$bin.tmp.$$" "$bin"
  rm -rf "$w"
fi
echo "$bin"
