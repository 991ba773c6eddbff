#!/usr/bin/env bash
# Debian's headless Chromium and its WebDriver, for the browser test of `nmt serve`
# (scripts/browser-test.py). Installs through apt when they are missing; needs root (or sudo).
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core > /dev/null
command -v chromium && command -v chromedriver
