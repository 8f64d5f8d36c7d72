#!/bin/sh
# Writes the listening address, then runs nginx in the foreground; its
# workers run as this user (as root, nginx would switch them to nobody).
#
#   serve.sh NGINX WORKDIR PORT
set -eu
nginx=$1 w=$2 port=$3
mkdir -p "$w/nginx"
printf 'listen 127.0.0.1:%s;\n' "$port" >"$w/nginx/listen.conf"
exec "$nginx" -e stderr -p "$w/nginx" -c "$w/nginx.conf" -g "daemon off; user $(id -un) $(id -gn);"
