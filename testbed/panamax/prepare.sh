#!/bin/sh
# Sets up a panamax mirror of the cargo canary, as a lab sets one up for
# crates.io: the index is a git repository (crates.io-index is one; here
# the canary's index files, which `seed` wrote, committed to a repository
# in the working directory, since the canary speaks no git), then
# `panamax init` and its shipped mirror.toml with only what a lab changes:
# rustup off, the crates source and the index repository pointed at the
# canary, and no base_url yet (serve.sh rewrites config.json once the port
# is known, with `panamax rewrite`).
#
#   prepare.sh PANAMAX WORKDIR CANARY_DL
set -eu
panamax=$1 w=$2 dl=$3
cd "$w/canary-index"
git init -q -b master .
git add -A
git -c user.name=canary -c user.email=canary@canary.invalid commit -q -m "the canary's index"
"$panamax" init "$w/mirror" >/dev/null
sed -i \
  -e '0,/^sync = true/s//sync = false/' \
  -e "s|^source = \"https://crates.io/api/v1/crates\"|source = \"$dl/api/v1/crates\"|" \
  -e "s|^source_index = .*|source_index = \"$w/canary-index\"|" \
  -e '/^base_url = /d' \
  "$w/mirror/mirror.toml"
# Every line changed, or the set-up fails here rather than syncing rustup.
grep -q '^sync = false' "$w/mirror/mirror.toml"
grep -q "^source = \"$dl/api/v1/crates\"" "$w/mirror/mirror.toml"
grep -q "^source_index = \"$w/canary-index\"" "$w/mirror/mirror.toml"
