#!/bin/sh
# aptly's set-up for one testbed start, run to completion before anything
# serves, in the order aptly's documentation gives for a mirror:
#   - a signing key of the lab's own, made in the working directory's
#     GNUPGHOME (no passphrase: publishing runs unattended), exported to
#     aptly-key.gpg (the keyring the suite verifies against);
#   - `aptly mirror create` of the canary, its Release verified against the
#     canary's keyring, filtered to the lab's packages with their
#     dependencies (a mirror of the whole canary cannot be updated: aptly
#     refuses the canary's upstream-only ec-bad-digest, "size check
#     mismatch", and stops);
#   - `aptly mirror update`, `aptly snapshot create` of the mirror, and
#     `aptly publish snapshot` of it, signed with the lab's key.
set -eu
# gpg starts an agent that outlives it: stop it however this ends.
trap 'gpgconf --kill gpg-agent' EXIT
mkdir -p -m 700 "$GNUPGHOME"
aptly() { "{venv}/root/usr/bin/aptly" -config="{workdir}/aptly.conf" "$@"; }
echo "init: making the repository's signing key"
gpg --batch --passphrase '' --quick-gen-key \
  "egress-conformance testbed aptly <aptly@egress.invalid>" ed25519 sign never
gpg --batch --export >"{workdir}/aptly-key.gpg"
key=$(gpg --batch --with-colons --list-secret-keys | awk -F: '/^fpr/ {print $10; exit}')
echo "init: aptly mirror create"
aptly mirror create -keyring="{canary_keyring}" \
  -filter='ec-present | ec-dep | ec-tripwire | ec-template-text' -filter-with-deps \
  canary "{canary_url}/debian" {dist} {component}
echo "init: aptly mirror update"
aptly mirror update -keyring="{canary_keyring}" canary
echo "init: aptly snapshot create"
aptly snapshot create canary-1 from mirror canary
echo "init: aptly publish snapshot"
aptly publish snapshot -gpg-key="$key" -distribution={dist} canary-1
mkdir -p "{workdir}/nginx"
