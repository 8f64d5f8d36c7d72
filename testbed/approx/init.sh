#!/bin/sh
# approx's set-up for one testbed start: its cache directory, and $user and
# $group, which must name the user approx runs as (the package makes a
# system user `approx` for it; the testbed runs it as whoever runs the
# testbed, and approx exits at once when they do not match).
set -eu
mkdir -p "{workdir}/cache"
printf '\n$user\t\t%s\n$group\t\t%s\n' "$(id -un)" "$(id -gn)" >>"{workdir}/approx.conf"
chmod 755 "{workdir}/approx-inetd"
