#!/usr/bin/env bash
# Writes cases.tsv for tests/node_semver.rs from the node-semver that npm
# bundles (generate.js says what each line is).
#
#   SEMVER=/usr/lib/node_modules/npm/node_modules/semver crates/egress-select/tests/data/node-semver/regenerate.sh
#
# The committed file was written by node-semver 7.8.5 (npm 11.19.1's) on
# node 20.20.2.
set -euo pipefail
cd "$(dirname "$0")"
SEMVER=${SEMVER:-$(npm root -g)/npm/node_modules/semver}
version=$(node -p "require('$SEMVER/package.json').version")
{
  echo "# node-semver $version, node $(node --version)"
  node generate.js "$SEMVER"
} >cases.tsv
