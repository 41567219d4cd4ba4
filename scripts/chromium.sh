#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests (the session app, @parley/react, useChat), which drive it with
# playwright-core (no downloaded browser). Needs root when it is missing; idempotent: a second run only checks it.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "chromium.sh: installing chromium from Debian's packages"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
