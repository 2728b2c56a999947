#!/usr/bin/env bash
# shellcheck disable=SC2016  # the chroot's script is single-quoted on purpose: it expands inside the root
# Build q7emu for aarch64 Linux from a clean checkout and run its primitive, kernel and shipped-case suites there,
# under qemu-aarch64 (docs/build.md §1.5). A manual script, not a CI stage: 35 minutes on two cores with a fresh
# Debian root, 28 with the root kept.
#
#   sudo bash tools/aarch64_check.sh [--rev REV] [--root DIR] [--mirror URL] [--suites LIST] [--log FILE]
#
#   --rev REV       the commit to check (default HEAD): `git archive REV`, so only committed files are built,
#                   and nothing the working tree holds (no build/, no generated C, no local edit) takes part
#   --root DIR      the Debian arm64 root (default $Q7EMU_ARM64_ROOT, else ~/.cache/q7emu/debian-bookworm-arm64);
#                   made once with debootstrap (about 7 minutes) and reused while its package list is the same
#   --mirror URL    the Debian mirror debootstrap reads (default http://deb.debian.org/debian)
#   --suites LIST   a comma list of primitives, kernels, cases (default all three)
#   --log FILE      also write the summary lines to FILE
#
# What it does, each step timed:
#   host     qemu-user-static, binfmt-support and debootstrap from apt-get when missing (Debian / Ubuntu host, run as
#            root: chroot and mount need it); the kernel's binfmt_misc entry for aarch64 (with its F flag, so the
#            interpreter works inside the chroot) checked, registered through update-binfmts when absent
#   root     `debootstrap --arch=arm64 --variant=minbase` of Debian bookworm with python3, python3-venv, python3-dev
#            and gcc: Debian's own aarch64 Python 3.11 and GCC 12, run by qemu-aarch64-static through binfmt
#   source   `git archive REV` unpacked into the root: a clean checkout
#   build    in a fresh venv in the root: the README's test command's install, `pip install -e ".[test]"`: numpy,
#            ml_dtypes and the test extras from their aarch64 wheels on PyPI, q7emu cythonized and compiled by the
#            root's GCC (setup.py builds only the `generic` level off x86: the primitives' portable C bodies)
#   suites   python -m pytest firmware_tests/primitives, then firmware_tests/kernels (-n auto; hypothesis without
#            its per-example deadline, which emulation would miss), then `q7emu replay examples/cases`
#
# The host's CA bundle is copied into the root for pip (a proxy the host trusts is trusted there); the host's pip
# settings are not: the root's commands run with a clean environment. Exit status 0 when every step passed.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
rev=HEAD
root=${Q7EMU_ARM64_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/q7emu/debian-bookworm-arm64}
mirror=http://deb.debian.org/debian
suites=primitives,kernels,cases
log=
suite=bookworm
packages=python3,python3-venv,python3-dev,gcc,libc6-dev,ca-certificates

die() { echo "aarch64_check: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --rev) rev=${2:?--rev needs a commit}; shift 2 ;;
    --root) root=${2:?--root needs a folder}; shift 2 ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift 2 ;;
    --suites) suites=${2:?--suites needs a list}; shift 2 ;;
    --log) log=${2:?--log needs a file}; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for s in ${suites//,/ }; do
  case $s in primitives|kernels|cases) ;; *) die "--suites: '$s' is not one of primitives, kernels, cases" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and mount need it): sudo bash $0"
[ "$(uname -s)" = Linux ] || die "needs a Linux host (chroot, binfmt_misc)"
commit=$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}") || die "--rev $rev: not a commit of $repo"

summary=()
failed=0
note() {  # note LINE: print and keep a summary line
  summary+=("$1")
  echo "$1"
}
# step NAME FUNCTION: run FUNCTION, timed; a failure is recorded and the later steps still run where they can
step() {
  local name=$1 fn=$2 t0=$SECONDS rc=0
  echo
  echo "=== aarch64: $name"
  "$fn" || rc=$?
  if [ "$rc" -eq 0 ]; then
    note "aarch64: $name: ok ($((SECONDS - t0)) s)"
  else
    note "aarch64: $name: FAILED (exit $rc, $((SECONDS - t0)) s)"
    failed=1
  fi
  return "$rc"
}

host_tools() {
  local need=()
  if [ "$(uname -m)" != aarch64 ]; then
    command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
    command -v update-binfmts >/dev/null || need+=(binfmt-support)
  fi
  command -v debootstrap >/dev/null || need+=(debootstrap)
  if [ "${#need[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null || { echo "missing ${need[*]} and no apt-get to install them" >&2; return 1; }
    echo "+ apt-get install -y ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" </dev/null >/dev/null ||
      { apt-get update -q </dev/null >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" </dev/null >/dev/null; } || return
  fi
  [ "$(uname -m)" = aarch64 ] && { echo "+ an aarch64 host: no emulation needed"; return 0; }
  local entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
  if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
    echo "+ mount binfmt_misc"
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || return
  fi
  if [ ! -e "$entry" ]; then
    echo "+ update-binfmts --enable qemu-aarch64"
    update-binfmts --enable qemu-aarch64 || return
  fi
  grep -qx enabled "$entry" || { echo "$entry is not enabled" >&2; return 1; }
  grep -q '^flags:.*F' "$entry" ||
    { echo "$entry has no F flag: its interpreter is not found inside a chroot (use Debian's qemu-user-static)" >&2
      return 1; }
  echo "+ binfmt: $(sed -n 's/^interpreter //p' "$entry") ($(grep '^flags' "$entry"))"
  echo "+ $(qemu-aarch64-static --version | head -n 1)"
}

make_root() {
  local stamp="$root/.q7emu-root" want="$suite arm64 $packages"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$root/usr/bin/python3" ]; then
    echo "+ reusing $root ($want)"
    return 0
  fi
  rm -rf "$root" && mkdir -p "$root" || return
  echo "+ debootstrap --arch=arm64 --variant=minbase --include=$packages $suite $root $mirror"
  debootstrap --arch=arm64 --variant=minbase --include="$packages" "$suite" "$root" "$mirror" \
    >"$root.debootstrap.log" 2>&1 || { tail -n 20 "$root.debootstrap.log" >&2; return 1; }
  echo "$want" >"$stamp"
}

mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true; done
  mounted=()
}
trap unmount_all EXIT

enter_root() {
  mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc" && mounted+=("$root/proc"); } || return
  mountpoint -q "$root/dev" || { mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" &&
                                 mounted+=("$root/dev"); } || return
  cp /etc/resolv.conf "$root/etc/resolv.conf" || return
  local ca
  for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    if [ -f "$ca" ]; then cp "$ca" "$root/etc/ssl/certs/q7emu-host-ca.crt" && break; fi
  done
  echo "+ $(chroot "$root" /usr/bin/uname -m): $(chroot "$root" /usr/bin/python3 --version), $(chroot "$root" /usr/bin/gcc --version | head -n 1)"
}

work=/q7emu-check
unpack_source() {
  rm -rf "${root:?}$work" && mkdir -p "$root$work/src" || return
  echo "+ git archive $commit ($rev) -> $root$work/src"
  git -C "$repo" archive --format=tar "$commit" | tar -x -C "$root$work/src"
}

# in_root SCRIPT: bash -c SCRIPT in the root, in the checkout, with a clean environment (and the venv once made)
in_root() {
  local cert=()
  [ -f "$root/etc/ssl/certs/q7emu-host-ca.crt" ] && cert=(PIP_CERT=/etc/ssl/certs/q7emu-host-ca.crt)
  chroot "$root" /usr/bin/env -i PATH="$work/venv/bin:/usr/local/bin:/usr/bin:/bin" HOME=/root LANG=C.UTF-8 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "${cert[@]}" \
    /bin/bash -c "set -euo pipefail; cd $work/src; $1"
}

build() {
  in_root 'python3 -m venv '"$work"'/venv && python -m pip install -q --upgrade pip &&
           echo "+ pip install -e \".[test]\"" && pip install -q -e ".[test]" &&
           python -c "import platform, numpy, ml_dtypes; print(\"+\", platform.machine(), \"numpy\", numpy.__version__, \"ml_dtypes\", ml_dtypes.__version__)" &&
           q7emu --version | sed "s/^/  /"'
}

# run_pytest FOLDER: the suite of one folder; its closing line goes into the summary
run_pytest() {
  local out="$root$work/pytest-$(basename "$1").log" rc=0
  in_root 'python -m pytest -p no:cacheprovider --hypothesis-profile=emulated -q '"$1" >"$out" 2>&1 || rc=$?
  tail -n 15 "$out"
  note "aarch64: $1: $(tail -n 1 "$out" | sed 's/^=* *//; s/ *=*$//')"
  return "$rc"
}
primitives() { run_pytest firmware_tests/primitives; }
kernels() { run_pytest firmware_tests/kernels; }
cases() {
  local out="$root$work/replay.log" rc=0
  in_root 'q7emu replay examples/cases' >"$out" 2>&1 || rc=$?
  tail -n 3 "$out"
  note "aarch64: q7emu replay examples/cases: $(tail -n 1 "$out")"
  return "$rc"
}

t_all=$SECONDS
echo "aarch64_check: q7emu $commit ($rev) in $root"
step host host_tools || exit 1
step root make_root || exit 1
step mount enter_root || exit 1
step source unpack_source || exit 1
if step build build; then
  for s in ${suites//,/ }; do step "$s" "$s" || true; done
fi
echo
note "aarch64: total $((SECONDS - t_all)) s on $(nproc) host cores ($(uname -m) host), commit $commit"
[ -n "$log" ] && printf '%s\n' "${summary[@]}" >"$log"
printf '%s\n' "${summary[@]}"
exit "$failed"
