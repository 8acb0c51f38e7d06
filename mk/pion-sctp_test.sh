#!/usr/bin/env bash
# Tests of mk/pion-sctp.sh on copies of the fork and its series: check
# passes on an exact copy and fails on a changed byte, an extra file and a
# missing one; new-patch turns a change into a patch that check then
# accepts; apply writes a copy that check accepts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
script=$root/mk/pion-sctp.sh
t=$(mktemp -d "${TMPDIR:-/tmp}/pion-sctp-test.XXXXXX")
trap 'rm -rf "$t"' EXIT

fail() { echo "pion-sctp_test: FAIL: $*" >&2; exit 1; }
fresh() { rm -rf "$t/tree" "$t/patches"; cp -R "$root/third_party/pion-sctp" "$t/tree"; cp -R "$root/third_party/pion-sctp-patches" "$t/patches"; }
check() { bash "$script" --tree "$t/tree" --patches "$t/patches" check >"$t/out" 2>&1; }

fresh
check || { cat "$t/out"; fail "check failed on an exact copy"; }

# One byte changed in the middle of a file.
f=$t/tree/association.go
off=$(($(wc -c <"$f") / 2))
byte=$(dd if="$f" bs=1 skip="$off" count=1 2>/dev/null)
[ "$byte" = x ] && new=y || new=x
printf '%s' "$new" | dd of="$f" bs=1 seek="$off" count=1 conv=notrunc 2>/dev/null
check && fail "check passed with a changed byte"
grep -q 'association.go' "$t/out" || fail "check did not name the changed file: $(cat "$t/out")"

fresh
echo extra >"$t/tree/extra.txt"
check && fail "check passed with an extra file"
fresh
rm "$t/tree/LICENSE"
check && fail "check passed with a missing file"

# new-patch: a changed line, a new file and a removed file become patch
# NNNN+1, which check then accepts.
fresh
sed -i 's/^\/\/ Package sctp implements/\/\/ Package sctp (changed) implements/' "$t/tree/sctp.go"
echo 'package sctp' >"$t/tree/added.go"
rm "$t/tree/codecov.yml" 2>/dev/null || rm "$t/tree/README.md"
printf 'Test a change\n\nWhat and why.\n' >"$t/msg"
n=$(grep -c '\.patch$' "$t/patches/series")
bash "$script" --tree "$t/tree" --patches "$t/patches" new-patch test-change "$t/msg" >"$t/out" 2>&1 ||
	{ cat "$t/out"; fail "new-patch failed"; }
want=$(printf '%04d-test-change.patch' $((n + 1)))
[ "$(tail -n1 "$t/patches/series")" = "$want" ] || fail "series does not end with $want"
grep -q '^Subject: \[PATCH\] Test a change$' "$t/patches/$want" || fail "$want has not the message's subject"
check || { cat "$t/out"; fail "check failed after new-patch"; }
bash "$script" --tree "$t/tree" --patches "$t/patches" new-patch again >"$t/out" 2>&1 &&
	fail "new-patch made a patch of nothing"

# apply writes a copy check accepts, and keeps a copy that differed.
fresh
echo stray >"$t/tree/stray.txt"
TMPDIR=$t bash "$script" --tree "$t/tree" --patches "$t/patches" apply >"$t/out" 2>&1 ||
	{ cat "$t/out"; fail "apply failed"; }
[ ! -e "$t/tree/stray.txt" ] || fail "apply left a file the series does not make"
ls "$t"/pion-sctp-before-apply.*/stray.txt >/dev/null 2>&1 || fail "apply did not keep the copy that differed"
check || { cat "$t/out"; fail "check failed after apply"; }

# export then import gives back the same patch files, byte for byte.
fresh
bash "$script" --patches "$t/patches" export "$t/repo" >"$t/out" 2>&1 || { cat "$t/out"; fail "export failed"; }
[ "$(git -C "$t/repo" rev-list --count pion-sctp-base..HEAD)" = "$(grep -c '\.patch$' "$t/patches/series")" ] ||
	fail "export made a commit count other than the series' patch count"
bash "$script" --patches "$t/patches" import "$t/repo" >"$t/out" 2>&1 || { cat "$t/out"; fail "import failed"; }
diff -r "$root/third_party/pion-sctp-patches" "$t/patches" >"$t/out" || { cat "$t/out"; fail "export and import changed the series"; }

echo "pion-sctp_test: ok"
