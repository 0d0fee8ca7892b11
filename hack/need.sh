#!/usr/bin/env bash
# hack/need.sh COMMAND[:PACKAGE] ...: make sure each COMMAND is on PATH
# before a make target uses it. A missing one is installed from its Debian
# package (PACKAGE, default COMMAND) when this runs as root on a machine
# with apt-get, unless NEED_INSTALL=no; otherwise the script stops with one
# line naming the package and the command that installs it (exit 127, as
# the shell's "command not found"). For docker it also checks that the
# daemon answers, and says how to start it if not.
#
#   hack/need.sh debootstrap docker:docker.io
#
# APT_GET names apt-get (the tests point it elsewhere).
set -uo pipefail
apt_get="${APT_GET:-apt-get}"
updated=no

install() {
	local pkg="$1"
	[[ "${NEED_INSTALL:-yes}" != no && "$(id -u)" == 0 ]] && command -v "$apt_get" >/dev/null 2>&1 || return 1
	echo "need: installing the Debian package $pkg ($apt_get install -y $pkg)" >&2
	if DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -q "$pkg" >&2; then
		return 0
	fi
	[[ $updated == yes ]] && return 1
	updated=yes
	DEBIAN_FRONTEND=noninteractive "$apt_get" update -q >&2 && DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -q "$pkg" >&2
}

for want in "$@"; do
	cmd="${want%%:*}" pkg="${want#*:}"
	if ! command -v "$cmd" >/dev/null 2>&1; then
		install "$pkg"
		if ! command -v "$cmd" >/dev/null 2>&1; then
			echo "need: $cmd not found: install the Debian package $pkg (as root: apt-get install -y $pkg)" >&2
			exit 127
		fi
	fi
	if [[ $cmd == docker ]] && ! docker info >/dev/null 2>&1; then
		echo "need: docker is installed but its daemon does not answer (docker info failed): start it (as root: systemctl start docker, or dockerd &)" >&2
		exit 1
	fi
done
exit 0
