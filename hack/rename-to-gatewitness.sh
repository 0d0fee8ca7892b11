#!/usr/bin/env bash
# rename-to-gatewitness.sh: the one mechanical change that renamed the
# project from its working name to gatewitness (CHANGELOG.md says why). It was
# run once, at the commit that carries it; it is kept so that a reviewer reads
# these forty lines instead of the thousand hunks they wrote. Running it again
# finds nothing to do.
#
# What it does, in order:
#  1. git mv every tracked file whose path holds the old name, one file at a
#     time, and commits the moves alone: a small file whose every other line
#     names the project (cmd/.../main.go) would otherwise change too much for
#     git to see a rename, and git log --follow would lose its history;
#  2. rewrites the old name in every tracked text file, in its three spellings
#     (lower case, Capitalised, UPPER CASE): the module path, imports, binaries,
#     profile names, environment variables, header names, proto packages,
#     cache folders, manifests, docs and workflows all spell it one of the
#     three ways;
#  3. regenerates the protobuf code (the descriptors embed the proto package
#     name with its length, so the generated files cannot be edited as text);
#  4. gofmt, since longer names move the alignment of comments and fields.
#
# What it cannot know is fixed by hand in the same commit (see git show).
set -euo pipefail
cd "$(dirname "$0")/.."

old_lower=gate""check new_lower=gatewitness
old_title=Gate""check new_title=Gatewitness
old_upper=GATE""CHECK new_upper=GATEWITNESS
self=hack/rename-to-gatewitness.sh
keep='^(CHANGELOG\.md|hack/rename-to-gatewitness\.sh)$'

# 1. Paths.
git ls-files | grep -i "$old_lower" | while IFS= read -r path; do
	dest=$(printf '%s' "$path" | sed -e "s/$old_lower/$new_lower/g" -e "s/$old_title/$new_title/g" -e "s/$old_upper/$new_upper/g")
	mkdir -p "$(dirname "$dest")"
	git mv "$path" "$dest"
done
if ! git diff --cached --quiet; then
	git commit -q -m "rename, step 1 of 2: move every file whose path names the old name, contents untouched

Committed alone so that git log --follow follows each file (step 2
rewrites the contents). This commit does not build on its own: imports
still name the old paths until step 2.
Made by hack/rename-to-gatewitness.sh."
fi

# 2. Contents of every tracked text file (grep -I passes over binary files).
git ls-files -z | grep -zvE "$keep" | xargs -0 grep -lIi "$old_lower" -- 2>/dev/null |
	while IFS= read -r file; do
		sed -i -e "s/$old_lower/$new_lower/g" -e "s/$old_title/$new_title/g" -e "s/$old_upper/$new_upper/g" "$file"
	done

# 3. Generated protobuf code, from the renamed proto packages.
hack/gen-proto.sh

# 4. Formatting.
git ls-files -z '*.go' | xargs -0 gofmt -w
git add -A
echo "renamed; left for the hand: $(git grep -il "$old_lower" -- . ":!$self" ":!CHANGELOG.md" | wc -l) files still name the old name"
