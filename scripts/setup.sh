#!/usr/bin/env bash
# Installs the system packages slotcron's tests use, when run as root and
# they are missing. The embedded SQLite store needs nothing: it is pure Go;
# the Redis and Postgres stores' tests start private servers, the alert
# rules' test a private Prometheus, the dashboard's test a headless
# Chromium.
set -euo pipefail
# Debian packages whose programs the tests start themselves, each on a free
# loopback port of its own: redis-server (and redis-cli, for Cluster set-up),
# PostgreSQL (initdb and postgres, run as the postgres user), Prometheus
# (prometheus and promtool) and Chromium (run headless).
packages=(redis-server redis-tools postgresql prometheus chromium)
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
