#!/usr/bin/env bash
# Installs Debian's BIND (named, nsupdate, tsig-keygen), dig and dnsperf when any is missing. DNS tests
# check answers with these real tools. Needs root (or sudo) and the Debian package archive.
set -euo pipefail
missing=()
for tool in named nsupdate tsig-keygen dig dnsperf; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "hack/dns-tools: installing bind9, bind9-utils, bind9-dnsutils, dnsperf (missing: ${missing[*]})" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "hack/dns-tools: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends bind9 bind9-utils bind9-dnsutils dnsperf >&2
# The package may enable a named service on systems with an init; tests start their own named.
