#!/usr/bin/env bash
# third_party/pion-sctp is pion/sctp, pristine from the Go module proxy, with
# braid's patch series (third_party/pion-sctp-patches) applied. This script
# keeps the two in step.
#
#   mk/pion-sctp.sh check           regenerate the copy in a temporary directory and
#                                   compare it with third_party/pion-sctp, byte for byte
#   mk/pion-sctp.sh apply           regenerate third_party/pion-sctp from the series
#                                   (a copy that differed is kept aside, and the script says where)
#   mk/pion-sctp.sh new-patch NAME [MSGFILE]
#                                   turn what third_party/pion-sctp has that the series does
#                                   not into the next patch, NNNN-NAME.patch, its commit
#                                   message from MSGFILE (subject, blank line, body)
#   mk/pion-sctp.sh export DIR      make DIR a git repository of the series: the pristine
#                                   module (tag pion-sctp-base), then one commit per patch,
#                                   to reorder, amend or rebase them with git
#   mk/pion-sctp.sh import DIR      write DIR's commits after pion-sctp-base back as the
#                                   series (replacing its patches); then `apply`
#
# The series file names the upstream module version and its go.sum hash; the
# module comes from the Go module cache (`go mod download`, which fetches it
# from the proxy once), so check works offline once it is there.
# --tree DIR and --patches DIR (before the command) point at another copy or
# series; mk/pion-sctp_test.sh uses them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tree=$root/third_party/pion-sctp
patches=$root/third_party/pion-sctp-patches
GO=${GO:-go}

die() { echo "pion-sctp: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--tree) tree=$(realpath -m "$2"); shift 2 ;;
	--patches) patches=$(cd "$2" && pwd); shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || die "usage: $0 [--tree DIR] [--patches DIR] check|apply|new-patch NAME [MSGFILE]|export DIR|import DIR"
series=$patches/series
[ -f "$series" ] || die "no series file at $series"

# git with the settings the patch files assume, whatever the user's config.
git_() {
	git -c core.autocrlf=false -c core.fileMode=true -c diff.noprefix=false \
		-c diff.mnemonicPrefix=false -c diff.renames=false -c diff.algorithm=myers \
		-c user.name="braid" -c user.email="braid@localhost" -c commit.gpgSign=false "$@"
}

# field NAME: the value of a "NAME value" line of the series file.
field() { sed -n "s/^$1[[:space:]]\{1,\}//p" "$series" | head -n1; }

# patch_files: the patches in series order (lines that are not fields or comments).
patch_files() { grep -Ev '^[[:space:]]*(#|$)|^(module|version|tag|commit|sum)[[:space:]]' "$series"; }

# pristine DIR: copy the upstream module the series names into DIR.
pristine() {
	local mod ver sum json dir got
	mod=$(field module) ver=$(field version) sum=$(field sum)
	[ -n "$mod" ] && [ -n "$ver" ] && [ -n "$sum" ] || die "$series must name module, version and sum"
	# Outside braid's module, so that its go.mod and replace directive play no part.
	json=$(cd "$1" && GOWORK=off GOFLAGS=-mod=mod "$GO" mod download -json "$mod@$ver") ||
		die "go mod download $mod@$ver failed (the Go module proxy is needed once, to fill the module cache)"
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
	got=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
	[ "$got" = "$sum" ] || die "$mod@$ver has sum $got, the series says $sum"
	[ -d "$dir" ] || die "go mod download gave no directory for $mod@$ver"
	cp -R "$dir/." "$1/"
	chmod -R u+w "$1"
}

# build DIR [commit]: the pristine module with every patch applied, in DIR,
# a git repository of its own (so that git apply works on it, wherever
# TMPDIR is). With commit, DIR's HEAD is that result, for new-patch to diff
# against.
build() {
	local out=$1 p list=()
	pristine "$out"
	git_ -C "$out" init -q
	while read -r p; do
		[ -f "$patches/$p" ] || die "series names $p, which is not in $patches"
		list+=("$patches/$p")
	done < <(patch_files)
	if ! git_ -C "$out" apply --whitespace=nowarn "${list[@]}" 2>"$work/apply.err"; then
		# Again one at a time, to name the patch that does not apply.
		rm -rf "$out" && mkdir "$out" && pristine "$out" && git_ -C "$out" init -q
		for p in "${list[@]}"; do
			git_ -C "$out" apply --whitespace=nowarn "$p" || die "${p##*/} does not apply"
		done
		cat "$work/apply.err" >&2
		die "the series does not apply"
	fi
	if [ "${2:-}" = commit ]; then
		git_ -C "$out" add -A --force
		git_ -C "$out" commit -q -m "$(field module) $(field version) with the series"
	fi
}

# same A B: whether directories A and B hold the same files with the same
# bytes (A's .git aside); prints what differs.
same() {
	diff -r --brief --exclude=.git "$1" "$2" >/dev/null && return 0
	diff -r --brief --exclude=.git "$1" "$2" | sed 's/^/  /' >&2 || true
	return 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/pion-sctp.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/out"

case $1 in
check)
	build "$work/out"
	if ! same "$work/out" "$tree"; then
		echo "pion-sctp: $tree is not pion/sctp $(field version) with the series in $patches (differences above;" >&2
		echo "  series result on the left). Make the change a patch: mk/pion-sctp.sh new-patch NAME" >&2
		exit 1
	fi
	echo "pion-sctp: $tree is $(field module) $(field version) with $(patch_files | wc -l) patches"
	;;
apply)
	build "$work/out"
	rm -rf "$work/out/.git"
	if [ -e "$tree" ] && ! same "$work/out" "$tree"; then
		keep=$(mktemp -d "${TMPDIR:-/tmp}/pion-sctp-before-apply.XXXXXX")
		cp -R "$tree/." "$keep/"
		echo "pion-sctp: the copy differed from the series (above); it is kept in $keep" >&2
	fi
	rm -rf "$tree"
	mkdir -p "$tree"
	cp -R "$work/out/." "$tree/"
	echo "pion-sctp: wrote $tree"
	;;
new-patch)
	name=${2:-}
	[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "new-patch NAME: NAME is letters, digits, dots, dashes and underscores"
	msg=${3:-}
	[ -z "$msg" ] || [ -f "$msg" ] || die "no message file $msg"
	build "$work/out" commit
	# The copy's files over the series result: additions, changes and removals.
	find "$work/out" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
	cp -R "$tree/." "$work/out/"
	git_ -C "$work/out" add -A --force
	git_ -C "$work/out" diff --cached --quiet && die "$tree has nothing the series does not"
	# The patch's author is whoever runs this, as git knows them.
	who=(-c user.name="$(git -C "$root" config user.name || echo braid)"
		-c user.email="$(git -C "$root" config user.email || echo braid@localhost)")
	if [ -n "$msg" ]; then
		git_ "${who[@]}" -C "$work/out" commit -q -F "$msg"
	else
		git_ "${who[@]}" -C "$work/out" commit -q -m "$name" -m "TODO: say what this patch changes and why."
	fi
	last=$(patch_files | sed -n 's/^\([0-9]\{4\}\)-.*/\1/p' | sort -n | tail -n1)
	num=$(printf '%04d' $((10#${last:-0} + 1)))
	file=$num-$name.patch
	git -C "$work/out" -c diff.noprefix=false -c diff.mnemonicPrefix=false -c diff.renames=false \
		format-patch -q -1 --zero-commit --no-signature --stdout HEAD >"$patches/$file"
	echo "$file" >>"$series"
	echo "pion-sctp: wrote $patches/$file and added it to the series"
	[ -n "$msg" ] || echo "pion-sctp: its message is a placeholder: edit the Subject line and body in the file" >&2
	;;
export)
	dir=${2:-}
	[ -n "$dir" ] && [ ! -e "$dir" ] || die "export DIR: DIR must be a path that does not exist yet"
	mkdir -p "$dir"
	pristine "$dir"
	git_ -C "$dir" init -q
	git_ -C "$dir" add -A --force
	git_ -C "$dir" commit -q -m "$(field module) $(field version)"
	git_ -C "$dir" tag pion-sctp-base
	while read -r p; do
		git_ -C "$dir" am -q --keep-cr "$patches/$p" || die "$p does not apply (git am left $dir mid-patch)"
	done < <(patch_files)
	echo "pion-sctp: $dir has the series as $(patch_files | wc -l) commits on tag pion-sctp-base"
	;;
import)
	dir=${2:-}
	[ -n "$dir" ] && git -C "$dir" rev-parse -q --verify pion-sctp-base >/dev/null ||
		die "import DIR: DIR must be a repository made by export (it has no tag pion-sctp-base)"
	git_ -C "$dir" format-patch -q --no-numbered --zero-commit --no-signature -o "$work/new" pion-sctp-base..HEAD
	[ -n "$(ls "$work/new")" ] || die "$dir has no commits after pion-sctp-base"
	while read -r p; do rm -f "$patches/$p"; done < <(patch_files)
	cp "$work/new"/*.patch "$patches/"
	{ grep -E '^[[:space:]]*(#|$)|^(module|version|tag|commit|sum)[[:space:]]' "$series"; (cd "$work/new" && ls -- *.patch); } >"$work/series"
	cp "$work/series" "$series"
	echo "pion-sctp: wrote $(ls "$work/new" | wc -l) patches to $patches; mk/pion-sctp.sh apply writes the tree from them"
	;;
*)
	die "unknown command $1 (check, apply, new-patch NAME, export DIR, import DIR)"
	;;
esac
