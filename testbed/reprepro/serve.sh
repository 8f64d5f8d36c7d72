#!/bin/sh
# Serves the exported repository with nginx on 127.0.0.1:PORT, in the
# foreground; its workers run as this user (as root, nginx would otherwise
# switch them to nobody).
#
#   serve.sh PORT
set -eu
printf 'listen 127.0.0.1:%s;\n' "$1" >"{workdir}/nginx/listen.conf"
exec "{venv}/root/usr/sbin/nginx" -e stderr -p "{workdir}/nginx" -c "{workdir}/nginx.conf" \
  -g "daemon off; user $(id -un) $(id -gn);"
