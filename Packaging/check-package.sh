#!/usr/bin/env bash
# Checks the package built by Packaging/build-deb.sh; exits non-zero on the first failure.
#
#   Packaging/check-package.sh [Packaging/out/nimbus_VERSION_ARCH.deb]
#
#  1. installs it into a throwaway root (dpkg-deb -x) and runs its nimbusd --version and
#     nimbusctl --help from there; ldd shows no Swift runtime library;
#  2. systemd-analyze verify on every unit (and the example drop-in), with warnings as errors;
#  3. systemd-analyze security of the system units: exposure 2.0 or lower for
#     nimbusd-system@.service, 1.5 or lower for nimbusd-user@.service (which must keep
#     CAP_SYS_ADMIN and the user's home); the user units' figures are printed;
#  4. starts the installed nimbusd with the example config (every key set) on temporary
#     folders, asks it for its status with nimbusctl, stops it with SIGTERM (exit 0);
#  5. the sysusers.d file, the postinst, the MIME type and the desktop entry parse;
#  6. lintian: no errors (warnings are printed).
#
# Needs systemd (systemd-analyze, systemd-sysusers), dpkg and lintian.
set -euo pipefail
export LC_ALL=C.UTF-8
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly max_exposure=2.0
# The desktop user's system unit keeps CAP_SYS_ADMIN (for fanotify_init; nimbusd drops it at
# once) and the home directories (where the synced folders are).
readonly max_desktop_exposure=1.5
die() { printf 'check-package: FAIL: %s\n' "$*" >&2; exit 1; }
step() { printf '==> %s\n' "$*" >&2; }
ok() { printf '    ok: %s\n' "$*" >&2; }

if [[ $# -gt 0 ]]; then
    deb=$1
else
    debs=(Packaging/out/nimbus_*.deb)
    [[ -f ${debs[0]} ]] || die "no Packaging/out/nimbus_*.deb; run Packaging/build-deb.sh first"
    [[ ${#debs[@]} -eq 1 ]] || die "several packages in Packaging/out: ${debs[*]}"
    deb=${debs[0]}
fi
[[ -f $deb ]] || die "$deb does not exist"
for tool in dpkg-deb systemd-analyze systemd-sysusers lintian ldd; do
    command -v "$tool" >/dev/null || die "'$tool' is missing"
done
version=$(dpkg-deb -f "$deb" Version)

work=$(mktemp -d)
daemon_pid=
cleanup() {
    if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then kill -KILL "$daemon_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
root=$work/root

# --- 1. Throwaway root -----------------------------------------------------------------------

step "installing $deb into a throwaway root"
dpkg-deb -x "$deb" "$root"
for program in nimbusd nimbusctl; do
    libraries=$(ldd "$root/usr/bin/$program")
    if grep -E 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|libicu|not found' <<<"$libraries" >&2; then
        die "$program needs the libraries above: the package must not need a Swift runtime"
    fi
    ok "ldd $program: $(awk '{print $1}' <<<"$libraries" | tr '\n' ' ')"
done
got=$("$root/usr/bin/nimbusd" --version) || die "nimbusd --version failed"
[[ $got == "nimbusd $version" ]] || die "nimbusd --version printed '$got', expected 'nimbusd $version'"
ok "nimbusd --version: $got"
help=$("$root/usr/bin/nimbusctl" --help) || die "nimbusctl --help failed"
grep -q '^USAGE: nimbusctl' <<<"$help" || die "nimbusctl --help printed no usage line"
ok "nimbusctl --help"
got=$("$root/usr/bin/nimbusctl" --version) || die "nimbusctl --version failed"
[[ $got == "nimbusctl $version" ]] || die "nimbusctl --version printed '$got', expected 'nimbusctl $version'"
ok "nimbusctl --version: $got"

# --- 2. systemd-analyze verify -------------------------------------------------------------

# verify insists that ExecStart= exists and runs `man` for each Documentation= page. The units
# name /usr/bin/nimbusd, which is not installed here, so each is verified as a copy that names
# the throwaway root's nimbusd instead, with MANPATH at its man pages. Unknown keys are only
# warnings to systemd-analyze, so any output at all counts as a failure.
step "systemd-analyze verify"
units=$work/units
mkdir -p "$units/system" "$units/user" "$work/runtime"
chmod 0700 "$work/runtime"
copy_unit() { sed "s#/usr/bin/nimbusd#$root/usr/bin/nimbusd#g" "$root/$1" > "$2"; }
copy_unit usr/lib/systemd/system/nimbusd-system@.service "$units/system/nimbusd-system@.service"
copy_unit usr/lib/systemd/system/nimbusd-user@.service "$units/system/nimbusd-user@.service"
copy_unit usr/lib/systemd/user/nimbusd.service "$units/user/nimbusd.service"
copy_unit usr/lib/systemd/user/nimbusd@.service "$units/user/nimbusd@.service"
mkdir -p "$units/system/nimbusd-system@.service.d"
cp "$root/usr/share/doc/nimbus/examples/nimbusd-system@.service.d/folders.conf" "$units/system/nimbusd-system@.service.d/"
verify() {
    local name=$1 output
    shift
    if ! output=$(env MANPATH="$root/usr/share/man" XDG_RUNTIME_DIR="$work/runtime" "$@" 2>&1) || [[ -n $output ]]; then
        printf '%s\n' "$output" >&2
        die "systemd-analyze verify: $name"
    fi
    ok "verify $name"
}
verify nimbusd-system@.service systemd-analyze verify "$units/system/nimbusd-system@.service"
# An instance, found through the unit path so that the drop-in folder next to it applies.
verify "nimbusd-system@example.service with the example drop-in folders.conf" \
    SYSTEMD_UNIT_PATH="$units/system:" systemd-analyze verify nimbusd-system@example.service
verify nimbusd-user@.service systemd-analyze verify "$units/system/nimbusd-user@.service"
verify "nimbusd-user@1000.service" SYSTEMD_UNIT_PATH="$units/system:" systemd-analyze verify nimbusd-user@1000.service
verify "nimbusd.service (--user)" systemd-analyze --user verify "$units/user/nimbusd.service"
verify "nimbusd@.service (--user)" systemd-analyze --user verify "$units/user/nimbusd@.service"

# --- 3. systemd-analyze security -----------------------------------------------------------

step "systemd-analyze security of the system units"
check_exposure() {
    local unit=$1 max=$2 report exposure
    report=$(systemd-analyze security --offline=yes --no-pager "$units/system/$unit" 2>&1) \
        || { printf '%s\n' "$report" >&2; die "systemd-analyze security of $unit failed"; }
    exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' <<<"$report")
    [[ -n $exposure ]] || { printf '%s\n' "$report" >&2; die "no exposure level in the systemd-analyze security report of $unit"; }
    grep -E '^✗' <<<"$report" | sed 's/^/    /' >&2 || true
    if awk -v got="$exposure" -v max="$max" 'BEGIN { exit !(got > max) }'; then
        printf '%s\n' "$report" >&2
        die "$unit: exposure $exposure is above $max"
    fi
    ok "$unit: exposure $exposure (at most $max)"
}
check_exposure nimbusd-system@.service "$max_exposure"
check_exposure nimbusd-user@.service "$max_desktop_exposure"
for unit in nimbusd.service nimbusd@.service; do
    user_exposure=$(systemd-analyze security --offline=yes --no-pager "$units/user/$unit" 2>&1 \
        | sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p')
    ok "$unit: exposure ${user_exposure:-?} (a user unit, for information only: see its comments on what a user manager can enforce)"
done

# --- 4. The installed daemon runs with the example config -----------------------------------

step "running the installed nimbusd with the example config"
sandbox=$work/sandbox
mkdir -p "$sandbox/home" "$sandbox/local" "$sandbox/cloud"
# Every key of the example set to the value shown (the example has them all commented out).
sed -E 's/^#([a-z][a-z-]* = )/\1/' "$root/usr/share/doc/nimbus/examples/nimbus.conf" > "$sandbox/nimbus.conf"
keys=$(grep -cE '^[a-z][a-z-]* = ' "$sandbox/nimbus.conf")
[[ $keys -ge 10 ]] || die "the example config sets only $keys keys once uncommented"
socket=$sandbox/nimbus.sock
env -i PATH=/usr/bin:/bin HOME="$sandbox/home" "$root/usr/bin/nimbusd" --config "$sandbox/nimbus.conf" \
    --local "$sandbox/local" --cloud "$sandbox/cloud" --state-dir "$sandbox/state" --socket "$socket" \
    > "$sandbox/log" 2>&1 &
daemon_pid=$!
status_output=
for _ in $(seq 1 150); do
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
        wait "$daemon_pid" && code=0 || code=$?
        daemon_pid=
        cat "$sandbox/log" >&2
        die "nimbusd exited with status $code with the example config"
    fi
    if [[ -S $socket ]] && status_output=$("$root/usr/bin/nimbusctl" --socket "$socket" status 2>&1); then
        break
    fi
    status_output=
    sleep 0.2
done
[[ -n $status_output ]] || { cat "$sandbox/log" >&2; die "nimbusctl status never answered within 30 s"; }
ok "nimbusctl status answered"
kill -TERM "$daemon_pid"
wait "$daemon_pid" && code=0 || code=$?
daemon_pid=
[[ $code -eq 0 ]] || { cat "$sandbox/log" >&2; die "nimbusd exited with status $code after SIGTERM, expected 0"; }
ok "SIGTERM: exit status 0"

# --- 5. The small files ------------------------------------------------------------------------

step "sysusers.d, postinst, MIME type, desktop entry"
mkdir -p "$work/sysroot"
sysusers=$(systemd-sysusers --root="$work/sysroot" --dry-run "$root/usr/lib/sysusers.d/nimbus.conf" 2>&1) \
    || { printf '%s\n' "$sysusers" >&2; die "systemd-sysusers rejects usr/lib/sysusers.d/nimbus.conf"; }
grep -q "Creating user 'nimbus'" <<<"$sysusers" || die "usr/lib/sysusers.d/nimbus.conf does not create the user nimbus"
ok "sysusers.d creates the user nimbus"
control=$work/control
dpkg-deb -e "$deb" "$control"
sh -n "$control/postinst" || die "postinst has syntax errors"
ok "postinst parses"
if command -v xmllint >/dev/null; then
    xmllint --noout "$root/usr/share/mime/packages/nimbus.xml" || die "nimbus.xml is not well-formed"
    ok "nimbus.xml is well-formed"
fi
grep -q 'type="application/x-nimbus-placeholder"' "$root/usr/share/mime/packages/nimbus.xml" \
    && grep -q '<glob pattern="\*.nimbus"/>' "$root/usr/share/mime/packages/nimbus.xml" \
    || die "nimbus.xml does not map *.nimbus to application/x-nimbus-placeholder"
desktop=$root/usr/share/applications/nimbus-open.desktop
grep -qx 'Exec=nimbusctl open %f' "$desktop" && grep -qx 'MimeType=application/x-nimbus-placeholder;' "$desktop" \
    && grep -qx 'NoDisplay=true' "$desktop" || die "nimbus-open.desktop lacks Exec, MimeType or NoDisplay"
if command -v desktop-file-validate >/dev/null; then
    desktop-file-validate "$desktop" || die "nimbus-open.desktop does not validate"
fi
ok "nimbus-open.desktop"
servicemenu=$root/usr/share/kio/servicemenus/nimbus.desktop
helper=$root/usr/libexec/nimbus/nimbus-dolphin
[[ -f $servicemenu && -x $helper ]] || die "the Dolphin service menu or its helper nimbus-dolphin is missing"
sh -n "$helper" || die "nimbus-dolphin has syntax errors"
grep -q '^Exec=/usr/libexec/nimbus/nimbus-dolphin download %F$' "$servicemenu" \
    || die "the Dolphin service menu does not run nimbus-dolphin"
if command -v desktop-file-validate >/dev/null; then
    # It knows only freedesktop types: KDE's Type=Service keys and the all/all pseudo-type are expected.
    problems=$(desktop-file-validate "$servicemenu" 2>&1 | grep -v -e 'the type is "Service" while this key is only valid for type "Application"' \
                                                             -e '"all" is an unregistered media type') || true
    [[ -z $problems ]] || die "the Dolphin service menu does not validate: $problems"
fi
ok "Dolphin service menu"
extensions=$root/usr/share/nautilus-python/extensions
[[ -f $extensions/nimbus_nautilus.py && -f $extensions/nimbus_shell/monitor.py ]] \
    || die "the Nautilus extension is not in usr/share/nautilus-python/extensions"
(cd "$extensions" && python3 -B -c 'import nimbus_shell.monitor, nimbus_shell.actions') \
    || die "the Nautilus extension's modules do not import"
ok "Nautilus extension and $(ls "$root"/usr/share/icons/hicolor/scalable/emblems | wc -l) emblem icons"

# --- 6. lintian --------------------------------------------------------------------------------

step "lintian"
# lintian warns when run as root (CI is); that line is not about the package.
lintian_output=$(lintian --fail-on error --tag-display-limit 0 "$deb" 2>&1) && code=0 || code=$?
lintian_output=$(grep -v '^running with root privileges is not recommended!$' <<<"$lintian_output" || true)
[[ -z $lintian_output ]] || printf '%s\n' "$lintian_output" | sed 's/^/    /' >&2
[[ $code -eq 0 ]] || die "lintian reported errors (exit status $code)"
ok "lintian: no errors, $(grep -c "^W: " <<<"$lintian_output" || true) warnings"

printf 'check-package: all checks passed for %s\n' "$deb" >&2
