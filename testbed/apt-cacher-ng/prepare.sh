#!/bin/sh
# Makes apt-cacher-ng's configuration directory for one testbed start from
# the files Debian's package ships in /etc/apt-cacher-ng (unpacked by
# scripts/setup-peers under ROOT), as a lab's install has them:
#
#   prepare.sh ROOT CONFDIR CANARY_ARCHIVE_URL
#
# CONFDIR already holds what the peer config writes (backends_debian and
# zzz_testbed.conf); this adds acng.conf and security.conf and changes in
# them only what running from ROOT and the canary as the one upstream need:
#   - SupportDir and the acng-doc LocalDirs entry point into ROOT, not
#     /usr/lib and /usr/share/doc (the package is unpacked, not installed);
#   - the targets of Remap-secdeb (Debian's security archive, named in
#     acng.conf itself rather than in a backends file) become the canary,
#     so that every upstream the configuration names is the canary and
#     nothing the suite sends can leave the machine.
# Everything else (the Remap lines, ReportPage, ExThreshold...) is the
# shipped text; the settings each variant adds are in CONFDIR/zzz_*.conf,
# which apt-cacher-ng reads last (it reads *.conf in alphabetical order;
# the package's own zz_debconf.conf comment suggests zzz_override.conf).
set -eu
root=$1
conf=$2
canary=$3
mkdir -p "$conf"
cp "$root/etc/apt-cacher-ng/acng.conf" "$root/etc/apt-cacher-ng/security.conf" "$conf/"
sed -i \
  -e "s|^SupportDir: /usr/lib/apt-cacher-ng\$|SupportDir: $root/usr/lib/apt-cacher-ng|" \
  -e "s|^LocalDirs: acng-doc /usr/share/doc/apt-cacher-ng\$|LocalDirs: acng-doc $root/usr/share/doc/apt-cacher-ng|" \
  -e "s|^\\(Remap-secdeb: .*\\) ; .*\$|\\1 ; $canary|" \
  "$conf/acng.conf"
# The package's postinst creates these (empty) when they are missing, and
# fills them from the machine's sources.list: here backends_debian is the
# canary (written by the peer config) and the others stay empty.
for f in backends_debvol backends_ubuntu backends_debian; do
  [ -e "$conf/$f" ] || : >"$conf/$f"
done
# Each change must have happened: a different acng.conf fails the start.
grep -q "^SupportDir: $root/" "$conf/acng.conf"
grep -q "^Remap-secdeb: .* ; $canary\$" "$conf/acng.conf"
