#!/usr/bin/env bash
# setup.sh DIR: playwright-core, pinned by tests/web/package-lock.json, in
# DIR/node_modules (npm ci; nothing when that version is there already).
# Only the driver: no browser is downloaded (playwright-core has none to
# download, and its install scripts are not run); page.js drives Debian's
# /usr/bin/chromium.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$1
want=$(node -e 'console.log(require(process.argv[1]).dependencies["playwright-core"])' "$here/package.json")
have=$(node -e 'try { console.log(require(process.argv[1]).version) } catch (e) {}' \
  "$dir/node_modules/playwright-core/package.json" 2>/dev/null || true)
if [[ $have == "$want" ]]; then echo "playwright-core $have is in $dir"; exit 0; fi
command -v npm >/dev/null || { echo "FAIL: npm is missing (scripts/deps.sh test installs it)"; exit 1; }
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
cd "$dir"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
echo "playwright-core $(node -e 'console.log(require("./node_modules/playwright-core/package.json").version)') installed in $dir"
