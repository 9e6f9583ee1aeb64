#!/usr/bin/env bash
# Installs the system packages slotcron's tests use, when run as root and
# they are missing, and builds the etcd server the etcd store's tests run.
# The embedded SQLite store needs nothing: it is pure Go; the Redis, Postgres
# and etcd stores' tests start private servers, the alert rules' test a
# private Prometheus, the dashboard's test a headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

# etcd is built from its Go module (tools/etcd), at the version of the
# client the etcd store uses, into bin/etcd; a Go toolchain is all it needs,
# as root or not. It is rebuilt when tools/etcd changes.
etcd_bin=bin/etcd
etcd_stamp=bin/.etcd-source
etcd_source=$(cat tools/etcd/go.mod tools/etcd/go.sum tools/etcd/main.go | cksum)
if [ ! -x "$etcd_bin" ] || [ "$(cat "$etcd_stamp" 2>/dev/null)" != "$etcd_source" ]; then
	echo "setup: building the etcd server into $etcd_bin" >&2
	mkdir -p bin
	(cd tools/etcd && go build -o "../../$etcd_bin.tmp" .)
	mv "$etcd_bin.tmp" "$etcd_bin"
	echo "$etcd_source" >"$etcd_stamp"
fi
# Debian packages whose programs the tests start themselves, each on a free
# loopback port of its own: redis-server (and redis-cli, for Cluster set-up),
# PostgreSQL (initdb and postgres, run as the postgres user), Prometheus
# (prometheus and promtool), Chromium (run headless) and curl (the TLS tests
# call the listener as an operator would).
packages=(redis-server redis-tools postgresql prometheus chromium curl)
need=()
for pkg in "${packages[@]}"; do
	dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing packages ${need[*]}; install them (as root: apt-get install -y ${need[*]})" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}"
