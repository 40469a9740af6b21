#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Shell completion (runtime/cli/completion/): the bash function completes
# commands, global and per-command options, option values (DIR, table|json)
# and container ids from `cryo list -q` under the --root typed on the line;
# fish the same through `complete -C`; zsh's function parses and loads.
# Commands and options come from --help, so every command must complete.
. "$(dirname "$0")/../lib/common.sh"
export LC_ALL=C
COMP=$CRYO_SRC/runtime/cli/completion
HOOK=$CRYO_BUILD/cryo-hook
[ -x "$CRYO_BIN" ] || skip "no cryo binary at $CRYO_BIN"
[ -x "$HOOK" ] || skip "no cryo-hook at $HOOK"
need_root

# The completions see `cryo` on PATH, as a user's shell does.
mkdir "$T/bin"
ln -s "$CRYO_BIN" "$T/bin/cryo"
export PATH=$T/bin:$PATH

# A registered container (cryo-hook's record of this shell) to complete ids.
R=$T/root
ID=cmpl-$$
mkdir -p "$T/bundle/rootfs" "$T/dirs/bundle-a"
echo '{"root": {"path": "rootfs"}}' >"$T/bundle/config.json"
echo "{\"id\":\"$ID\",\"pid\":$$,\"bundle\":\"$T/bundle\"}" | "$HOOK" --root "$R" register || fail "cryo-hook register"
at_exit "echo '{\"id\":\"$ID\",\"pid\":$$,\"bundle\":\"$T/bundle\"}' | '$HOOK' --root '$R' unregister"
[ "$(cryo --root "$R" list -q)" = "$ID" ] || fail "cryo list -q does not show $ID: $(cryo --root "$R" list -q)"

# bash: COMP_WORDS as readline splits the line ('' = the empty word at the cursor)
. "$COMP/cryo.bash"
complete -p cryo | grep -q -- '-F _cryo' || fail "cryo.bash does not register _cryo"
n=0
want() {   # want "EXPECTED" WORD...: COMPREPLY, sorted, space-joined
	local exp=$1 got
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_cryo
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd' ')
	[ "$got" = "$exp" ] || fail "bash: \`$*\` completes to \`$got\`, expected \`$exp\`"
	n=$((n + 1))
}
want "check checkpoint" cryo ch
want "--root --rootless" cryo --ro
want "--log --log-format" cryo --lo
want "fsfreeze fsthaw" cryo --root "$R" fs
want "--thaw-retry --timeout" cryo freeze --t
want "json table" cryo list --format ''
want "post pre" cryo sleep-hook ''
want "$T/dirs/bundle-a" cryo run --bundle "$T/dirs/b"
want "$ID" cryo --root "$R" kill ''
want "$ID" cryo --root "$R" freeze --timeout 5 c
want "" cryo --root "$R" kill "$ID" ''
# runc's one-dash spellings of long options
want "json table" cryo list -format ''
want "$ID" cryo -root "$R" kill ''
all=$(cryo --help | sed -nE 's/^  ([a-z][a-z0-9-]*)  .*/\1/p' | sort | paste -sd' ')
want "$all" cryo ''

# fish: the same through its own completion engine
if command -v fish >/dev/null; then
	fish -n "$COMP/cryo.fish" || fail "fish -n cryo.fish"
	fishc() { fish -c "source '$COMP/cryo.fish'; complete -C '$1'" | cut -f1 | sort | paste -sd' '; }
	[ "$(fishc 'cryo ch')" = "check checkpoint" ] || fail "fish: \`cryo ch\` completes to \`$(fishc 'cryo ch')\`"
	[ "$(fishc 'cryo freeze --ti')" = "--timeout" ] || fail "fish: \`cryo freeze --ti\` completes to \`$(fishc 'cryo freeze --ti')\`"
	[ "$(fishc "cryo --root $R kill ")" = "$ID" ] || fail "fish: no container id: \`$(fishc "cryo --root $R kill ")\`"
	n=$((n + 3))
else
	log "fish not installed: cryo.fish not checked"
fi

# zsh: parses, and compinit picks the function up from fpath
if command -v zsh >/dev/null; then
	zsh -n "$COMP/_cryo" || fail "zsh -n _cryo"
	out=$(HOME=$T zsh -f -c "fpath=('$COMP' \$fpath); autoload -Uz compinit; compinit -u -d '$T/zcompdump'; print -r -- \${_comps[cryo]}" 2>&1)
	[ "$out" = "_cryo" ] || fail "zsh: compinit does not bind cryo to _cryo: $out"
	n=$((n + 1))
else
	log "zsh not installed: _cryo not checked"
fi
log "$n completion checks passed"
