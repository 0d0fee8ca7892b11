#!/usr/bin/env bash
# hack/nightly-issues.sh ALERTS SERIES: a nightly's issues, one per failed
# test and series, with the gh CLI (GH_TOKEN, GH_REPO set):
#   - ALERTS is what `gatewitness publish --alerts` wrote: the failed tests
#     of tonight's runs, each with a key (series/test);
#   - SERIES lists the series that ran tonight, one a line.
# A failed test without an open issue gets one (labelled $ISSUE_LABEL, the
# key in an HTML comment of its body); one with an open issue gets a
# comment; an open issue whose series ran tonight and whose test did not
# fail is closed. SITE_URL (the published site) and RUN_URL (this workflow
# run) are linked from the issues.
#
# When more than MAX_ISSUES (10) tests failed tonight (a whole night
# broken: the cluster, the install, the suite), no issue is opened or
# commented per test: one summary issue lists them (opened, or commented
# on when open), so a bad night does not flood the tracker; the summary
# issue is closed on the next night with MAX_ISSUES or fewer failures.
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "usage: hack/nightly-issues.sh ALERTS SERIES" >&2
	exit 2
fi
alerts="$1" series="$2"
label="${ISSUE_LABEL:-nightly-failure}"
site="${SITE_URL:-}"
run="${RUN_URL:-}"
max="${MAX_ISSUES:-10}"
if ! [[ "$max" =~ ^[0-9]+$ ]]; then
	echo "nightly-issues: MAX_ISSUES=$max; want a count" >&2
	exit 2
fi
summary_key="nightly-summary"

gh label create "$label" --color B60205 --description "a test the nightly found failing" 2>/dev/null || true
open="$(gh issue list --label "$label" --state open --limit 500 --json number,body)"
number_of() {
	jq -r --arg key "<!-- gatewitness-key: $1 -->" 'map(select(.body | contains($key))) | .[0].number // empty' <<<"$open"
}

failed="$(jq length "$alerts")"
if ((failed > max)); then
	body="$(jq -r --arg site "$site" --arg run "$run" --argjson max "$max" '
		"**\(length) tests failed tonight**, more than \($max): one issue for the night instead of one per test.\n\n" +
		(map("- \(.test) on \(.target) (\(.kind)): \(.message | split("\n")[0] | .[0:200])") | .[0:100] | join("\n")) +
		(if length > 100 then "\n- and \(length - 100) more" else "" end) +
		"\n\n- the site: \($site)\n- the workflow run: \($run)\n\n<!-- gatewitness-key: nightly-summary -->"' "$alerts")"
	n="$(number_of "$summary_key")"
	if [[ -n "$n" ]]; then
		gh issue comment "$n" --body "$body"
	else
		gh issue create --label "$label" --title "$failed tests failed in the nightly of $(date -u +%Y-%m-%d)" --body "$body"
	fi
else
	jq -c '.[]' "$alerts" | while read -r b; do
		key="$(jq -r .key <<<"$b")"
		body="$(jq -r --arg site "$site" --arg run "$run" '
			"**\(.test)** \(if .kind == "broken" then "broke tonight" elif .kind == "new" then "fails (its first result)" else "still fails" end)" +
			" on \(.target) (\(.implementation)).\n\n> \(.message)\n\n" +
			"- failing since \(.since)" + (if (.lastPassed // "") != "" then ", last passed \(.lastPassed)" else "" end) + "\n" +
			"- the test page: \($site)\(.page)\n- the workflow run: \($run)\n\n" +
			"<!-- gatewitness-key: \(.key) -->"' <<<"$b")"
		n="$(number_of "$key")"
		if [[ -n "$n" ]]; then
			gh issue comment "$n" --body "$body"
		else
			gh issue create --label "$label" --title "$(jq -r '"\(.test) fails on \(.target)"' <<<"$b")" --body "$body"
		fi
	done
	if n="$(number_of "$summary_key")" && [[ -n "$n" ]]; then
		gh issue close "$n" --comment "$failed tests failed in ${run:-the last run}, $max or fewer: each has its own issue again."
	fi
fi

jq -r '.[] | .body' <<<"$open" | sed -n 's/.*<!-- gatewitness-key: \(.*\) -->.*/\1/p' | while read -r key; do
	[[ "$key" == "$summary_key" ]] && continue
	if grep -qxF "${key%/*}" "$series" && ! jq -e --arg key "$key" 'any(.[]; .key == $key)' "$alerts" >/dev/null; then
		gh issue close "$(number_of "$key")" --comment "It did not fail in ${run:-the last run}: it passed, or its features were not claimed."
	fi
done
