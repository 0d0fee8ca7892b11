#!/usr/bin/env bash
# hack/version.sh [DIR]: the version of the git checkout DIR (default: this
# repository) as Go names a module version, for a report's implementation
# version and for stamping a build (-ldflags -X
# github.com/gatewitness/gatewitness/internal/version.stamped=...):
#   - the tag vX.Y.Z when HEAD is tagged with it;
#   - else a pseudo-version after the newest such tag before HEAD,
#     vX.Y.(Z+1)-0.YYYYMMDDhhmmss-<12 hex of the commit>;
#   - else v0.0.0-YYYYMMDDhhmmss-<12 hex of the commit>;
# with "+dirty" when the work tree has changes. Never a bare commit hash:
# a shallow checkout without tags gives the last form, so fetch the tags
# (actions/checkout with fetch-depth: 0) to get the first two.
set -euo pipefail
dir="${1:-$(dirname "$0")/..}"
g() { git -C "$dir" "$@"; }
commit="$(g rev-parse --short=12 HEAD)"
when="$(TZ=UTC g log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)"
dirty=""
if [[ -n "$(g status --porcelain --untracked-files=no)" ]]; then dirty="+dirty"; fi
semver='^v[0-9]+\.[0-9]+\.[0-9]+$'
if tag="$(g describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null)" && [[ "$tag" =~ $semver ]]; then
	echo "$tag$dirty"
elif tag="$(g describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null)" && [[ "$tag" =~ $semver ]]; then
	IFS=. read -r major minor patch <<<"${tag#v}"
	echo "v$major.$minor.$((patch + 1))-0.$when-$commit$dirty"
else
	echo "v0.0.0-$when-$commit$dirty"
fi
