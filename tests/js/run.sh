#!/bin/sh
# The browser scripts' checks (app/static/js): install the pinned tools (package-lock.json),
# lint (eslint.config.js), type check (jsconfig.json: // @ts-check modules) and the node:test
# unit tests in tests/js. Needs node >= 18 and npm (Debian: apt-get install nodejs npm).
# Run from anywhere; exits non-zero on the first failure.
set -eu
cd "$(dirname "$0")/../.."
npm ci --no-audit --no-fund --loglevel=error
npx --no-install eslint
npx --no-install tsc -p jsconfig.json
node --test tests/js/*.test.mjs
