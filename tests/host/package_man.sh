#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Man pages stay in step with --help: every command `cryo --help` lists has
# a page (runtime/cli/man/cryo-CMD.8.scd, or an `aliases` line), and each
# page's OPTIONS section lists exactly the options `cryo CMD --help` names
# (global options may live in cryo.8 only). The same for `cryo --help` vs
# cryo.8 and `cryo-hook --help` vs cryo-hook.8. With scdoc installed, every
# page must render and the build must have rendered it.
. "$(dirname "$0")/../lib/common.sh"
MAN=$CRYO_SRC/runtime/cli/man
HOOK=$CRYO_BUILD/cryo-hook
[ -x "$CRYO_BIN" ] || skip "no cryo binary at $CRYO_BIN"

# The -x / --long tokens of a text, without -h/--help; a one-dash long
# option (-root, as runc spells them too) counts as its --root.
opts_of() {
	grep -oE -- '(^|[^[:alnum:]_-])--?[[:alpha:]][[:alnum:]-]*' | sed -E 's/^[^-]*//; s/^-([[:alpha:]][[:alnum:]-]+)$/--\1/' \
		| grep -vxE -- '-h|--help' | sort -u
}
# The option term lines of a page's OPTIONS section (`*-d*, *--detach*`).
page_terms() {
	awk '/^# /{ sec = $0; next } sec == "# OPTIONS" && /^\*-/' "$1"
}
# Every spelling a page documents, one a line.
page_opts() { page_terms "$1" | opts_of; }
# The page documenting COMMAND (through `aliases`), empty if none.
page_of() {
	local name=cryo-$1.8 target
	target=$(awk -v a="$name" '$1 == a { print $2 }' "$MAN/aliases")
	[ -n "$target" ] && name=$target
	[ -e "$MAN/$name.scd" ] && echo "$MAN/$name.scd"
}

errors=()
err() { errors+=("$*"); }

# compare WHAT PAGE HELP-TEXT [EXTRA-ALLOWED-OPTIONS]
compare() {
	local what=$1 page=$2 help=$3 allowed=${4:-} o pname hopts popts term
	pname=$(basename "$page" .scd)
	pname="${pname%.8}(8)"
	hopts=$(printf '%s\n' "$help" | opts_of)
	popts=$(page_opts "$page")
	for o in $hopts; do
		grep -qxF -- "$o" <<<"$popts" && continue
		grep -qxF -- "$o" <<<"$allowed" && continue
		err "$pname lacks option $o, which \`$what --help\` lists: add \`*$o*\` to # OPTIONS in ${page#"$CRYO_SRC"/}"
	done
	# a term (`*-d*, *--detach*`) is one option: --help must name a spelling of it
	while IFS= read -r term; do
		term=$(printf '%s\n' "$term" | opts_of)
		[ -n "$term" ] || continue   # -h, --help
		[ -n "$(comm -12 <(printf '%s\n' "$term") <(printf '%s\n' "$hopts"))" ] && continue
		err "$pname documents option $(printf '%s\n' "$term" | paste -sd/), which \`$what --help\` does not list (${page#"$CRYO_SRC"/})"
	done < <(page_terms "$page")
}

top=$("$CRYO_BIN" --help) || fail "cryo --help failed"
# cryo --help: the global options (the command summaries mention theirs)
compare "cryo" "$MAN/cryo.8.scd" "$(printf '%s\n' "$top" | sed -n '/^Global options:/,/^$/p')"
globals=$(page_opts "$MAN/cryo.8.scd")
cmds=$(printf '%s\n' "$top" | sed -nE 's/^  ([a-z][a-z0-9-]*)  .*/\1/p')
[ "$(echo "$cmds" | wc -w)" -ge 10 ] || fail "found only $(echo "$cmds" | wc -w) commands in \`cryo --help\`: $cmds"
for c in $cmds; do
	page=$(page_of "$c")
	if [ -z "$page" ]; then
		err "cryo $c has no man page: add runtime/cli/man/cryo-$c.8.scd (see runtime/cli/man/README.md)"
		continue
	fi
	help=$("$CRYO_BIN" "$c" --help 2>&1) || { err "\`cryo $c --help\` failed: $help"; continue; }
	compare "cryo $c" "$page" "$help" "$globals"
	grep -qF "*cryo-$c*(8)" "$MAN/cryo.8.scd" || grep -qE "^cryo-$c\.8 " "$MAN/aliases" \
		|| err "cryo.8 does not list *cryo-$c*(8) under # COMMANDS (runtime/cli/man/cryo.8.scd)"
done
if [ -x "$HOOK" ]; then
	compare "cryo-hook" "$MAN/cryo-hook.8.scd" "$("$HOOK" --help 2>&1)"
else
	err "no cryo-hook binary at $HOOK"
fi
# Pages of commands that no longer exist.
for p in "$MAN"/cryo-*.8.scd; do
	n=$(basename "$p" .8.scd)
	n=${n#cryo-}
	[ "$n" = hook ] && continue
	printf '%s\n' $cmds | grep -qxF "$n" || err "${p#"$CRYO_SRC"/} documents \`cryo $n\`, which \`cryo --help\` does not list"
done

if command -v scdoc >/dev/null; then
	for p in "$MAN"/*.scd; do
		out=$(scdoc <"$p" 2>&1 >/dev/null) || err "scdoc rejects ${p#"$CRYO_SRC"/}: $out"
		g=$CRYO_BUILD/runtime/cli/man/$(basename "$p" .scd).gz
		[ -s "$g" ] || err "the build did not render $g (is the build configured with scdoc?)"
	done
else
	log "scdoc not installed: pages not rendered"
fi

if [ ${#errors[@]} -gt 0 ]; then
	printf '  %s\n' "${errors[@]}" >&2
	fail "${#errors[@]} man page problem(s), listed above"
fi
log "$(echo "$cmds" | wc -w) commands, cryo and cryo-hook: pages and --help agree"
