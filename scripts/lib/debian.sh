# Shared by scripts/setup-peers and scripts/setup-infra (sourced, not run):
# Debian packages at pinned versions, unpacked into a project-local
# directory.

# The package names a .deb depends on that are libraries (first of each
# set of alternatives), one a line.
lib_depends() { # deb
  dpkg-deb -f "$1" Depends Pre-Depends 2>/dev/null |
    sed 's/^[A-Za-z-]*: //' | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/:any//; s/^ *//; s/ *$//' |
    grep -E '^(lib|zlib)' || true
}

# Whether the package lists hold every PACKAGE=VERSION given.
all_listed() { # PACKAGE=VERSION...
  local p
  for p in "$@"; do
    apt-cache madison "${p%%=*}" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
      grep -xF "${p#*=}" >/dev/null || return 1
  done
}

# Unpacks the Debian packages LIST names (one PACKAGE=VERSION a line, the
# version exactly as `apt-cache policy` gives the candidate) into DIR/root
# with `dpkg-deb -x`: never installed, so no maintainer script runs and no
# service starts. The libraries they depend on that are missing are
# installed (libraries start nothing). Errors go to LOG.
install_debs() { # list dir log
  local list=$1 dir=$2 log=$3 line pkgs=() dl libs=() missing=() l
  while read -r line; do
    line=${line%%#*}
    line=$(echo "$line" | tr -d '[:space:]')
    [ -n "$line" ] || continue
    case $line in
      *=*) pkgs+=("$line") ;;
      *) echo "error: $list: '$line' is not PACKAGE=VERSION" >"$log"; return 1 ;;
    esac
  done <"$list"
  if [ ${#pkgs[@]} -eq 0 ]; then
    echo "error: $list lists no package" >"$log"
    return 1
  fi
  if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    echo "error: apt-get and dpkg-deb are needed (a Debian machine)" >"$log"
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # A machine whose package lists are missing or stale (a fresh container)
  # does not list every pinned version: update them once. (`apt-cache show
  # PKG=VERSION` exits 0 for a version it does not know, so each version is
  # looked up in `apt-cache madison`.)
  if ! all_listed "${pkgs[@]}"; then
    apt-get update -qq >>"$log" 2>&1 || true
  fi
  dl=$(mktemp -d)
  if ! (cd "$dl" && apt-get download -qq "${pkgs[@]}") >>"$log" 2>&1; then
    echo "error: apt-get download ${pkgs[*]} failed (is the version exactly apt-cache policy's candidate?): $(grep -m1 '^E:' "$log")" >>"$log"
    rm -rf "$dl"
    return 1
  fi
  mkdir -p "$dir/root"
  for d in "$dl"/*.deb; do
    dpkg-deb -x "$d" "$dir/root" >>"$log" 2>&1 || { echo "error: dpkg-deb -x $(basename "$d") failed" >>"$log"; rm -rf "$dl"; return 1; }
    while read -r l; do [ -n "$l" ] && libs+=("$l"); done < <(lib_depends "$d")
  done
  rm -rf "$dl"
  for l in "${libs[@]}"; do
    dpkg-query -W -f='${Status}' "$l" 2>/dev/null | grep -q 'ok installed' || missing+=("$l")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
      { echo "error: apt-get install ${missing[*]} failed: $(grep -m1 '^E:' "$log")" >>"$log"; return 1; }
  fi
}

