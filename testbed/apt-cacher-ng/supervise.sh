#!/bin/sh
# Runs apt-cacher-ng as Debian's apt-cacher-ng.service runs it: in the
# foreground, restarted when it fails. The shipped unit says
#   ExecStart=/usr/sbin/apt-cacher-ng -c "/etc/apt-cacher-ng" ForeGround=1
#   Restart=on-failure
# and leaves systemd's defaults for the rest: RestartSec=100ms, and at most
# 5 starts within 10 s (StartLimitBurst, StartLimitIntervalSec), after which
# the unit stays down. This does the same, and says so on standard error.
#
#   supervise.sh PROGRAM ARGS...
#
# A clean exit (status 0) or one by SIGTERM or SIGINT (the testbed stopping
# it) is not restarted; any other exit, a crash by a signal included, is.
child=
trap 'kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 0' TERM INT
starts=
while :; do
  now=$(date +%s)
  recent=
  for t in $starts; do
    [ $((now - t)) -lt 10 ] && recent="$recent $t"
  done
  n=$(echo $recent | wc -w)
  if [ "$n" -ge 5 ]; then
    echo "supervise: start limit hit: 5 starts within 10 s; staying down (as systemd's StartLimitBurst=5 does)" >&2
    exit 1
  fi
  starts="$recent $now"
  "$@" &
  child=$!
  wait "$child"
  rc=$?
  case $rc in
    0 | 130 | 143) exit "$rc" ;;
  esac
  if [ "$rc" -gt 128 ]; then
    how="signal $((rc - 128))"
  else
    how="status $rc"
  fi
  echo "supervise: $(basename "$1") ended ($how); restarting in 0.1 s (Restart=on-failure)" >&2
  sleep 0.1
done
