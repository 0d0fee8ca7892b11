#!/usr/bin/env bash
# nightly.sh does what the nightly workflow (.github/workflows/nightly.yml)
# does, on this machine; `make nightly` runs it:
#
#   1. runs the suite in-process against the reference gateway;
#   2. runs it through the local control plane with the reference gateway
#      as a controller (make test-cluster), when the control plane's
#      binaries are built and we are root (NIGHTLY_LOCALCP=auto), always
#      (yes: missing binaries or root is an error) or never (no);
#   3. adds the runs' records to the history folder, with those of the
#      folders NIGHTLY_ADD names (runs made elsewhere: the workflow's matrix
#      over Gateway API releases and channels), and builds the site
#      (gatewitness publish), keeping each series' newest NIGHTLY_KEEP runs;
#      the failed tests of tonight's runs go to NIGHTLY_ALERTS (JSON).
#
# Failing tests do not stop it: they are what the site shows. It exits 1
# when a suite ended without a run record (it could not run), after
# publishing the runs that have one.
#
# Settings (environment): NIGHTLY_DIR (out/nightly), NIGHTLY_HISTORY
# ($NIGHTLY_DIR/site/history), NIGHTLY_SITE ($NIGHTLY_DIR/site),
# NIGHTLY_RUN_FLAGS (more flags of gatewitness run, for both suites),
# NIGHTLY_INPROCESS (yes; no skips step 1), NIGHTLY_LOCALCP (auto),
# NIGHTLY_ADD (report folders, space-separated), NIGHTLY_ALERTS
# ($NIGHTLY_DIR/alerts.json), NIGHTLY_KEEP (90), NIGHTLY_NIGHTS (14),
# LOCALCP_BIN (.cache/localcp/bin), GO (go).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

GO="${GO:-go}"
NIGHTLY_DIR="${NIGHTLY_DIR:-out/nightly}"
NIGHTLY_SITE="${NIGHTLY_SITE:-$NIGHTLY_DIR/site}"
NIGHTLY_HISTORY="${NIGHTLY_HISTORY:-$NIGHTLY_SITE/history}"
NIGHTLY_LOCALCP="${NIGHTLY_LOCALCP:-auto}"
NIGHTLY_INPROCESS="${NIGHTLY_INPROCESS:-yes}"
NIGHTLY_ALERTS="${NIGHTLY_ALERTS:-$NIGHTLY_DIR/alerts.json}"
read -ra extra_runs <<<"${NIGHTLY_ADD:-}"
NIGHTLY_KEEP="${NIGHTLY_KEEP:-90}"
NIGHTLY_NIGHTS="${NIGHTLY_NIGHTS:-14}"
LOCALCP_BIN="${LOCALCP_BIN:-$PWD/.cache/localcp/bin}"
read -ra run_flags <<<"${NIGHTLY_RUN_FLAGS:-}"

case "$NIGHTLY_LOCALCP" in
auto | yes | no) ;;
*)
	echo "nightly: NIGHTLY_LOCALCP=$NIGHTLY_LOCALCP; want auto, yes or no" >&2
	exit 2
	;;
esac

runs="$NIGHTLY_DIR/runs/$(date -u +%Y%m%dT%H%M%SZ)"
bin="$NIGHTLY_DIR/bin"
mkdir -p "$runs" "$bin"
# In a git checkout, stamp the commit into the binary: it is the version
# the reports give the reference gateway.
vcs=()
if git rev-parse --git-dir >/dev/null 2>&1; then vcs=(-buildvcs=true); fi
"$GO" build "${vcs[@]}" -o "$bin/gatewitness" ./cmd/gatewitness

if [[ "$NIGHTLY_INPROCESS" == no ]]; then
	echo "nightly: the in-process suite: skipped (NIGHTLY_INPROCESS=no)"
else
	echo "nightly: the in-process suite -> $runs/in-process"
	"$bin/gatewitness" run --in-process --report-dir "$runs/in-process" "${run_flags[@]}" ||
		echo "nightly: the in-process run exited $?"
fi

echo "nightly: the local control plane suite -> $runs/localcp"
why=""
missing=""
for b in etcd kube-apiserver kube-controller-manager kwok; do
	[[ -x "$LOCALCP_BIN/$b" ]] || missing+=" $b"
done
if [[ "$(id -u)" != 0 ]]; then
	why="it needs root (a network namespace for the Pod IPs)"
elif [[ -n "$missing" ]]; then
	why="not built in $LOCALCP_BIN:$missing; build them with: make localcp-build LOCALCP_BIN=$LOCALCP_BIN"
fi
if [[ "$NIGHTLY_LOCALCP" == no ]]; then
	echo "nightly: skipped (NIGHTLY_LOCALCP=no)"
elif [[ -n "$why" ]]; then
	if [[ "$NIGHTLY_LOCALCP" == yes ]]; then
		echo "nightly: cannot run the local control plane suite: $why" >&2
		exit 1
	fi
	echo "nightly: skipped: $why"
else
	mkdir -p "$runs/localcp"
	make --no-print-directory test-cluster GO="$GO" LOCALCP_BIN="$LOCALCP_BIN" LOCALCP_REPORT_DIR="$runs/localcp" \
		LOCALCP_RUN_FLAGS="${NIGHTLY_RUN_FLAGS:-}" ||
		echo "nightly: the local control plane run exited $?"
fi

adds=()
broken=0
for d in "$runs"/*/ "${extra_runs[@]}"; do
	d="${d%/}"
	[[ -d "$d" ]] || continue
	if [[ -f "$d/run.json" ]]; then
		adds+=(--add "$d")
	else
		echo "nightly: $d has no run record: that suite did not run" >&2
		broken=1
	fi
done
# The calibration matrix of the last make calibrate, when there is one, is
# the site's calibration.html (docs/calibration.md).
calibration=()
NIGHTLY_CALIBRATION="${NIGHTLY_CALIBRATION:-out/calibration/matrix.json}"
if [[ -f "$NIGHTLY_CALIBRATION" ]]; then
	calibration=(--calibration "$NIGHTLY_CALIBRATION")
fi
"$bin/gatewitness" publish --history "$NIGHTLY_HISTORY" --out "$NIGHTLY_SITE" \
	--keep "$NIGHTLY_KEEP" --nights "$NIGHTLY_NIGHTS" --alerts "$NIGHTLY_ALERTS" "${calibration[@]}" "${adds[@]}"
exit "$broken"
