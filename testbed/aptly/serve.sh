#!/bin/sh
# aptly's REST API on a Unix socket in the working directory, and nginx on
# 127.0.0.1:PORT serving the published repository and proxying /api/ to
# it, both in the foreground of this process group (the testbed stops the
# group). nginx's workers run as this user, so that they may connect to
# the API's socket (as root, nginx would otherwise switch them to nobody).
#
#   serve.sh PORT
set -eu
printf 'listen 127.0.0.1:%s;\n' "$1" >"{workdir}/nginx/listen.conf"
"{venv}/root/usr/bin/aptly" -config="{workdir}/aptly.conf" api serve \
  -listen="unix://{workdir}/aptly-api.sock" &
# The API's socket first: a request to /api/ before it exists would be a 502.
i=0
while [ ! -S "{workdir}/aptly-api.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
exec "{venv}/root/usr/sbin/nginx" -e stderr -p "{workdir}/nginx" -c "{workdir}/nginx.conf" \
  -g "daemon off; user $(id -un) $(id -gn);"
