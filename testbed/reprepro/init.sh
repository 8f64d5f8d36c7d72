#!/bin/sh
# reprepro's set-up for one testbed start, run to completion before nginx
# serves: a signing key of the lab's own, made in the working directory's
# GNUPGHOME (no passphrase: exports run unattended) and exported to
# reprepro-key.gpg (the keyring the suite verifies against); the canary's
# keyring imported there, its key's ID named in conf/updates; then
# `reprepro update`, which fetches and verifies the canary's InRelease,
# takes the lab's packages and exports the signed repository to public/.
set -eu
# gpg starts an agent that outlives it: stop it however this ends.
trap 'gpgconf --kill gpg-agent' EXIT
mkdir -p -m 700 "$GNUPGHOME"
echo "init: making the repository's signing key"
gpg --batch --passphrase '' --quick-gen-key \
  "egress-conformance testbed reprepro <reprepro@egress.invalid>" ed25519 sign never
gpg --batch --export >"{workdir}/reprepro-key.gpg"
echo "init: importing the canary's keyring"
gpg --batch --import "{canary_keyring}"
canary=$(gpg --batch --with-colons --show-keys "{canary_keyring}" | awk -F: '/^pub/ {print $5; exit}')
echo "VerifyRelease: $canary" >>"{workdir}/repo/conf/updates"
echo "init: reprepro update"
"{venv}/root/usr/bin/reprepro" --basedir "{workdir}/repo" --outdir "{workdir}/public" \
  --gnupghome "$GNUPGHOME" update
mkdir -p "{workdir}/nginx"
