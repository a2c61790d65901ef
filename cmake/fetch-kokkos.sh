#!/usr/bin/env bash
# Obtain Kokkos 3.4.01 and Kokkos Kernels 3.4.01 from Debian bookworm's `trilinos`
# source package, extract only those two projects and apply statexfer's patches.
#
#   fetch-kokkos.sh DEST PATCH_DIR      (applies PATCH_DIR/kokkos-3.4.01-*.patch)
#
# Leaves DEST/kokkos and DEST/kokkos-kernels. Nothing is downloaded again while
# DEST/.stamp matches the patches. The apt configuration is private (nothing of the
# machine's is changed) and derived from the mirror the machine already uses, so no
# host name is written here. With no network, put the two folders there by hand.
set -euo pipefail

dest=${1:?usage: fetch-kokkos.sh DEST PATCH_DIR}
patch_dir=${2:?usage: fetch-kokkos.sh DEST PATCH_DIR}
suite=bookworm   # trilinos 13.2.0 there bundles Kokkos 3.4.01

stamp_want=$( (cat "$patch_dir"/kokkos-3.4.01-*.patch 2>/dev/null || true) | sha256sum | cut -c1-16)
if [[ -f "$dest/.stamp" && "$(cat "$dest/.stamp")" == "$stamp_want" &&
      -f "$dest/kokkos/CMakeLists.txt" && -f "$dest/kokkos-kernels/CMakeLists.txt" ]]; then
  exit 0
fi

mirror_uri() {
  # deb822 sources first, then one-line sources; skip security and update mirrors.
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk '$1 == "deb" || $1 == "deb-src" {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; break}}' "$f"
  done
}
uri=$(mirror_uri | grep -v -- '-security' | grep -v -- '-updates' | head -n 1 || true)
if [[ -z "$uri" ]]; then
  echo "fetch-kokkos: no Debian mirror found in /etc/apt; place Kokkos 3.4.01 in $dest/kokkos and Kokkos Kernels in $dest/kokkos-kernels" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/download"
echo "deb-src $uri $suite main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
echo "fetch-kokkos: downloading Debian $suite source package trilinos (Kokkos 3.4.01 inside)"
apt-get "${apt_opts[@]}" -q update >/dev/null
(cd "$work/download" && apt-get "${apt_opts[@]}" -q source --download-only trilinos >/dev/null)
orig=$(ls "$work"/download/trilinos_*.orig.tar.* | head -n 1)

rm -rf "$dest/kokkos" "$dest/kokkos-kernels" "$dest/.stamp"
mkdir -p "$dest"
tar -xf "$orig" -C "$work" --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
mv "$work"/Trilinos-*/packages/kokkos "$dest/kokkos"
mv "$work"/Trilinos-*/packages/kokkos-kernels "$dest/kokkos-kernels"
grep -q '3.4.01' "$dest/kokkos/master_history.txt" ||
  { echo "fetch-kokkos: the trilinos package does not hold Kokkos 3.4.01" >&2; exit 1; }

for p in "$patch_dir"/kokkos-3.4.01-*.patch; do
  [[ -f $p ]] || continue
  echo "fetch-kokkos: applying $(basename "$p")"
  patch -s -p1 -d "$dest" <"$p"
done
echo "$stamp_want" >"$dest/.stamp"
