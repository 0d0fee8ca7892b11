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
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "usage: hack/nightly-issues.sh ALERTS SERIES" >&2
	exit 2
fi
alerts="$1" series="$2"
label="${ISSUE_LABEL:-nightly-failure}"
site="${SITE_URL:-}"
run="${RUN_URL:-}"

gh label create "$label" --color B60205 --description "a test the nightly found failing" 2>/dev/null || true
open="$(gh issue list --label "$label" --state open --limit 500 --json number,body)"
number_of() {
	jq -r --arg key "<!-- gatewitness-key: $1 -->" 'map(select(.body | contains($key))) | .[0].number // empty' <<<"$open"
}

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

jq -r '.[] | .body' <<<"$open" | sed -n 's/.*<!-- gatewitness-key: \(.*\) -->.*/\1/p' | while read -r key; do
	if grep -qxF "${key%/*}" "$series" && ! jq -e --arg key "$key" 'any(.[]; .key == $key)' "$alerts" >/dev/null; then
		gh issue close "$(number_of "$key")" --comment "It did not fail in ${run:-the last run}: it passed, or its features were not claimed."
	fi
done
