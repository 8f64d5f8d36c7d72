#!/usr/bin/env bash
# Writes the pip tag fixtures of tests/pip_tags.rs: for each case, what
# `pip debug --verbose` prints under "Compatible tags", one tag a line,
# after a header with the command that printed it.
#
#   PIP="python3 -m pip" crates/egress-select/tests/data/pip-tags/regenerate.sh
#
# PIP defaults to `python3 -m pip`. The committed files were printed by
# pip 24.2 (packaging 24.1) on CPython 3.11.7, Linux x86_64, glibc 2.36;
# pip 23.2.1 (packaging 21.3) printed the same lists except
# cp313-free-threaded.txt (it still lists abi3 for cp313t).
set -euo pipefail
cd "$(dirname "$0")"
PIP=${PIP:-python3 -m pip}
pip_version=$($PIP --version | awk '{print $2}')

# gen NAME [TARGET-LINE] -- PIP-DEBUG-ARGS...
gen() {
  local name=$1 target=$2
  shift 3
  {
    echo "# pip debug --verbose $*"
    echo "# printed by pip $pip_version (Python $(python3 -c 'import platform; print(platform.python_version())'), $(uname -s) $(uname -m), glibc $(ldd --version | head -1 | awk '{print $NF}'))"
    if [ -n "$target" ]; then
      echo "# target: $target"
    fi
    $PIP debug --verbose "$@" 2>/dev/null |
      sed -n '/^Compatible tags/,$p' | tail -n +2 | sed 's/^ *//'
  } >"$name.txt"
}

gen cp311-manylinux_2_17_x86_64 "" -- --python-version 3.11 --platform manylinux_2_17_x86_64 --implementation cp
gen cp311-manylinux2014_x86_64 "" -- --python-version 3.11 --platform manylinux2014_x86_64 --implementation cp
gen cp312-macosx_11_0_arm64 "" -- --python-version 3.12 --platform macosx_11_0_arm64 --implementation cp
gen cp310-macosx_10_9_x86_64 "" -- --python-version 3.10 --platform macosx_10_9_x86_64 --implementation cp
gen cp39-macosx_10_9_universal2 "" -- --python-version 3.9 --platform macosx_10_9_universal2
gen cp312-win_amd64-explicit-abis "" -- --python-version 3.12 --platform win_amd64 --implementation cp --abi none --abi cp312 --abi abi3
gen cp37-linux_x86_64 "" -- --python-version 3.7 --platform linux_x86_64 --implementation cp
gen cp27-linux_x86_64 "" -- --python-version 2.7 --platform linux_x86_64 --implementation cp
gen cp3-win_amd64 "" -- --python-version 3 --platform win_amd64 --implementation cp
gen pp39-manylinux_2_17_x86_64 "" -- --python-version 3.9 --platform manylinux_2_17_x86_64 --implementation pp --abi pypy39_pp73
gen py311-linux_x86_64 "" -- --python-version 3.11 --platform linux_x86_64 --implementation py --abi none
gen cp312-aarch64-several "" -- --python-version 312 --platform manylinux_2_28_aarch64 --platform musllinux_1_2_aarch64 --platform manylinux_2_28_aarch64 --platform win_arm64
gen cp311-any "" -- --python-version 3.11 --platform any --implementation cp
gen cp313-free-threaded "" -- --python-version 3.13 --platform manylinux_2_17_x86_64 --implementation cp --abi cp313t
# The machine's own tags (no --platform): what pip computes from the glibc
# it runs on, which Target::with_platform_expansion reproduces from the
# newest manylinux tag.
glibc=$(ldd --version | head -1 | awk '{print $NF}' | tr . _)
gen host-cp311 "--platform manylinux_${glibc}_x86_64 --platform linux_x86_64 --expand" -- --python-version 3.11 --implementation cp
