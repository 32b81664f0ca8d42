#!/usr/bin/env bash
# Installs Debian's BIND (named, nsupdate, tsig-keygen), dig and dnsperf, the peers `make bench-dns`
# compares against (Knot DNS's knotd and knotc, NSD), and PowerDNS with its sqlite3 backend (which the
# rfc2136 backend's tests also start), Prometheus (promtool, which checks and unit-tests the
# alerting rules in config/observability/alerts), and the DNSSEC checkers (delv, dnssec-keygen and
# dnssec-signzone from BIND, Knot's keymgr, Unbound as a second validating resolver, Zonemaster),
# when any is missing. DNS tests check answers with these real tools. Needs root (or sudo) and the
# Debian package archive.
set -euo pipefail
missing=()
for tool in named nsupdate tsig-keygen dig delv dnssec-keygen dnssec-signzone dnsperf knotd knotc keymgr nsd pdns_server pdnsutil sqlite3 promtool prometheus unbound zonemaster-cli; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
ls /usr/lib/*/pdns/libgsqlite3backend.so >/dev/null 2>&1 || missing+=(pdns-backend-sqlite3)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "hack/dns-tools: installing bind9, bind9-utils, bind9-dnsutils, dnsperf, knot, nsd, pdns-server, pdns-backend-sqlite3, sqlite3, prometheus, unbound, zonemaster-cli (missing: ${missing[*]})" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "hack/dns-tools: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
# policy-rc.d keeps the packages' services (named, knot, nsd, pdns, prometheus, unbound) from
# starting where an init runs them: tests and benchmarks start their own servers on loopback ports, and promtool needs
# no server at all.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get install -y -qq --no-install-recommends bind9 bind9-utils bind9-dnsutils dnsperf knot nsd pdns-server pdns-backend-sqlite3 sqlite3 prometheus unbound zonemaster-cli >&2
