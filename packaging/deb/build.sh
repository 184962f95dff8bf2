#!/usr/bin/env bash
# Builds alertd_<version>_amd64.deb from binaries already built, with Debian's
# own tools only (dpkg-deb, dpkg-shlibdeps, strip, gzip): no network, no
# debian/ source tree, no debhelper. `make deb` calls it; see docs/systemd.md.
#
#   packaging/deb/build.sh VERSION BIN_DIR GENERATE_MANUAL OUT_DIR
#
# BIN_DIR holds alertd and alertctl, built with --static-swift-stdlib;
# GENERATE_MANUAL is swift-argument-parser's generate-manual tool.
set -euo pipefail

version=$1 bin=$2 generate_manual=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
maintainer="alertd developers <dev@alertd.invalid>"
# Man pages and the changelog carry the last commit's date, so two builds of
# one commit give the same files.
: "${SOURCE_DATE_EPOCH:=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
doc=$root/usr/share/doc/alertd

install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/usr/lib/sysusers.d" \
    "$root/etc/alertd" "$root/usr/share/man/man1" "$root/usr/share/man/man8" "$doc" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/lintian/overrides"

# Binaries, stripped as dh_strip strips executables.
for tool in alertd alertctl; do
    install -m 0755 "$bin/$tool" "$root/usr/bin/$tool"
    strip --remove-section=.comment --remove-section=.note "$root/usr/bin/$tool"
done

# The repository's units, with the binary where the package puts it and the
# man page it ships.
for unit in alertd.service alertd.socket; do
    sed -e 's|/usr/local/bin/alertd|/usr/bin/alertd|g' -e 's|^Description=.*|&\nDocumentation=man:alertd(8)|' \
        "$repo/systemd/$unit" >"$root/lib/systemd/system/$unit"
    chmod 0644 "$root/lib/systemd/system/$unit"
done
install -m 0644 "$here/alertd.sysusers" "$root/usr/lib/sysusers.d/alertd.conf"

# The commented example config, with the state where the unit keeps it. It
# listens on loopback and names no tokens; postinst makes it root:alertd 0640.
sed 's|^state_dir: ./alertd-state$|state_dir: /var/lib/alertd|' "$repo/config/alertd.yaml" >"$root/etc/alertd/alertd.yaml"
grep -q '^state_dir: /var/lib/alertd$' "$root/etc/alertd/alertd.yaml"
chmod 0644 "$root/etc/alertd/alertd.yaml"
echo /etc/alertd/alertd.yaml >"$root/DEBIAN/conffiles"

# Man pages from the binaries' own help (swift-argument-parser's generate-manual).
date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)
"$generate_manual" "$root/usr/bin/alertd" --section 8 --date "$date" --authors "$maintainer" -o "$work"
"$generate_manual" "$root/usr/bin/alertctl" --section 1 --date "$date" --authors "$maintainer" -o "$work"
# A blank line in the help text is a blank line in mdoc, which groff warns
# about: make it a paragraph break.
sed 's/^$/.Pp/' "$work/alertd.8" | gzip -9n >"$root/usr/share/man/man8/alertd.8.gz"
sed 's/^$/.Pp/' "$work/alertctl.1" | gzip -9n >"$root/usr/share/man/man1/alertctl.1.gz"

# Shell completions, from alertctl itself.
# (bash-completion sources the file: no #! line.)
"$root/usr/bin/alertctl" --generate-completion-script bash | sed '1{/^#!/d}' \
    >"$root/usr/share/bash-completion/completions/alertctl"
"$root/usr/bin/alertctl" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_alertctl"
"$root/usr/bin/alertctl" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/alertctl.fish"

# Docs. A native package's changelog.gz is in Debian's format: one entry that
# points at the project's own CHANGELOG.
install -m 0644 "$here/copyright" "$doc/copyright"
gzip -9n -c "$repo/README.md" >"$doc/README.md.gz"
gzip -9n -c "$repo/CHANGELOG.md" >"$doc/CHANGELOG.md.gz"
gzip -9n -c "$repo/docs/systemd.md" >"$doc/systemd.md.gz"
gzip -9n -c "$repo/docs/dashboard.md" >"$doc/dashboard.md.gz"
cat >"$work/changelog" <<EOF
alertd ($version) unstable; urgency=medium

  * Built from the alertd repository; CHANGELOG.md.gz beside this file says
    what this version changed.

 -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")
EOF
gzip -9n -c "$work/changelog" >"$doc/changelog.gz"
install -m 0644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/alertd"

# Depends: what dpkg-shlibdeps computes from the binaries' NEEDED entries
# (it wants a debian/control to exist, nothing more), plus systemd-sysusers
# for postinst, as dh_installsysusers adds.
mkdir "$work/src" "$work/src/debian"
printf 'Source: alertd\n\nPackage: alertd\nArchitecture: amd64\n' >"$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/alertd" -e"$root/usr/bin/alertctl")
shlibs=${shlibs#shlibs:Depends=}
[ -n "$shlibs" ]

install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$root/DEBIAN/"
cat >"$root/DEBIAN/control" <<EOF
Package: alertd
Version: $version
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $shlibs, systemd | systemd-standalone-sysusers | systemd-sysusers
Section: net
Priority: optional
Description: lets programs ask people questions over HTTP
 A service posts an alert (a title, a message and a few buttons) to a
 client: an operator console, a kiosk or a team dashboard. Each client shows
 one alert at a time, in queue order. A person picks a button; alertd records
 the choice durably, hands it to everyone waiting for it (long-polls,
 callbacks) and shows the client's next alert.
 .
 This package has the daemon alertd (a hardened systemd service, enabled but
 not started; optional socket activation), its config in /etc/alertd and the
 command-line client alertctl.
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
    >"$root/DEBIAN/md5sums"

mkdir -p "$out"
deb="$out/alertd_${version}_amd64.deb"
# xz at level 3: 10 % larger than the default 6, in under half the time.
dpkg-deb --root-owner-group -Zxz -z3 --build "$root" "$deb" >/dev/null
echo "$deb"
