# SPDX-License-Identifier: GPL-2.0-only
# bash completion for cryo(8). Commands and options are read from
# `cryo --help` and `cryo COMMAND --help` when completing, so new commands
# and options need no edit here; container ids come from `cryo list -q`
# (with the --root given on the command line).

# The -x / --long tokens of a help text (stdin); -root (runc's one-dash
# spelling) is offered as --root.
_cryo_opts() {
	grep -oE -- '(^|[^[:alnum:]_-])--?[[:alpha:]][[:alnum:]-]*' | sed -E 's/^[^-]*//; s/^-([[:alpha:]][[:alnum:]-]+)$/--\1/' | sort -u
}

# What the argument of option $2 is, from help text $1: a metavariable
# (DIR, FILE, MS, ...), a list of words (table|json), or nothing (a flag).
_cryo_optarg() {
	local o=${2%%=*}
	[[ $o =~ ^-[[:alpha:]][[:alnum:]-]+$ ]] && o=-$o   # -root = --root
	printf '%s\n' "$1" | grep -oE -- "(^|[^[:alnum:]_-])$o ([A-Z][A-Z_]*|[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)+)" \
		| head -1 | sed -E 's/^.* //'
}

# Complete $cur as a value of kind $1 (from _cryo_optarg or a usage line).
_cryo_value() {
	local kind=$1 cur=$2
	case $kind in
	*'|'*) mapfile -t COMPREPLY < <(compgen -W "${kind//|/ }" -- "$cur") ;;
	DIR) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	FILE | PATH | MOUNTPOINT | SOCK | S | KEY) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	*) COMPREPLY=() ;;
	esac
}

_cryo() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev= cryo=${COMP_WORDS[0]}
	local -a root=()
	local cmd= help usage kind w i npos=0

	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# global options up to the command word
	help=$("$cryo" --help 2>/dev/null) || return 0
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		--root | -root) root=(--root "${COMP_WORDS[i + 1]}"); ((i++)) ;;
		--root=* | -root=*) root=("$w") ;;
		-*) [ -n "$(_cryo_optarg "$(printf '%s\n' "$help" | sed -n '/^Global options:/,/^$/p')" "$w")" ] && ((i++)) ;;
		*) cmd=$w; break ;;
		esac
	done

	if [ -z "$cmd" ]; then
		local globals
		globals=$(printf '%s\n' "$help" | sed -n '/^Global options:/,/^$/p')
		kind=$(_cryo_optarg "$globals" "$prev")
		if [ "$COMP_CWORD" -gt 1 ] && [ -n "$kind" ]; then
			_cryo_value "$kind" "$cur"
		elif [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(printf '%s\n' "$globals" | _cryo_opts)" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(printf '%s\n' "$help" | sed -nE 's/^  ([a-z][a-z0-9-]*)  .*/\1/p')" -- "$cur")
		fi
		return 0
	fi

	help=$("$cryo" "$cmd" --help 2>/dev/null) || return 0
	kind=$(_cryo_optarg "$help" "$prev")
	if [ "$COMP_CWORD" -gt $((i + 1)) ] && [ -n "$kind" ]; then
		_cryo_value "$kind" "$cur"
		return 0
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(printf '%s\n' "$help" | _cryo_opts)" -- "$cur")
		return 0
	fi
	# operands: the first one as the usage line says (ID, DIR, pre|post)
	for ((i = i + 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == -* ]]; then
			[ -n "$(_cryo_optarg "$help" "$w")" ] && ((i++))
		else
			((npos++))
		fi
	done
	[ "$npos" = 0 ] || return 0
	usage=$(printf '%s\n' "$help" | sed -n 's/^Usage: cryo [^ ]* //p' | head -1 | sed -E 's/\[[^]]*\]//g')
	case " $usage " in
	*[\ \(\|]ID[\ \)\|]*)
		mapfile -t COMPREPLY < <(compgen -W "$("$cryo" "${root[@]}" list -q 2>/dev/null)" -- "$cur") ;;
	*)
		read -r kind _ <<<"$usage"
		_cryo_value "$kind" "$cur" ;;
	esac
	return 0
}
complete -F _cryo cryo
