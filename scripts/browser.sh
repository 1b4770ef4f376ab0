#!/usr/bin/env bash
# The browser tests' needs, for 'make test' only ('make demo' needs neither): Debian's
# Chromium (never a browser downloaded by a test tool) and a Korean font for screenshots.
# Quiet and without apt when both are there; installs them with apt when run as root.
set -euo pipefail

# subtle: not 'fc-list | grep -q' under pipefail: grep -q exits at the first match, fc-list
# then dies of SIGPIPE and the pipeline fails although the font is installed
has_nanum() { local fonts; fonts=$(fc-list 2>/dev/null || true); [[ "${fonts,,}" == *nanum* ]]; }

command -v chromium >/dev/null 2>&1 && has_nanum && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium and fonts-nanum for the browser tests..." >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq chromium fonts-nanum >/dev/null
else
  echo "note: the browser tests need chromium and a Korean font" \
    "(sudo apt-get install chromium fonts-nanum); without them they are skipped" >&2
fi
