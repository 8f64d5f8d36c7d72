#!/bin/sh
# Points the mirror's config.json at this address (`panamax rewrite`, as a
# lab does with its own hostname), then serves it on 127.0.0.1:PORT.
#
#   serve.sh PANAMAX WORKDIR PORT
set -eu
panamax=$1 w=$2 port=$3
"$panamax" rewrite "$w/mirror" --base-url "http://127.0.0.1:$port/crates" >/dev/null
exec "$panamax" serve "$w/mirror" --listen 127.0.0.1 --port "$port"
