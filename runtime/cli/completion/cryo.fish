# SPDX-License-Identifier: GPL-2.0-only
# fish completion for cryo(8). Commands and options are read from
# `cryo --help` and `cryo COMMAND --help` when completing; container ids
# come from `cryo list -q` (with the --root given on the command line).

# The -x / --long tokens of a help text (stdin).
function __cryo_opts
    # (fish 3.6: a builtin heading a pipe in a function does not read its stdin)
    cat | string match -ar -- '(?:^|[^[:alnum:]_-])(--?[[:alpha:]][[:alnum:]-]*)' | string match -r -- '--?[[:alpha:]].*' \
        | string replace -r -- '^-([[:alpha:]][[:alnum:]-]+)$' '--$1' | sort -u
end

# The argument kind of option $argv[2] in help text $argv[1] (DIR, table|json, ...).
function __cryo_optarg
    # -root = --root
    set -l o (string replace -r -- '^-([[:alpha:]][[:alnum:]-]+)$' '--$1' $argv[2])
    printf '%s\n' $argv[1] | string match -r -- '(?:^|[^[:alnum:]_-])'(string escape --style=regex -- $o)' ([A-Z][A-Z_]*|[a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)+)' | sed -n 2p
end

function __cryo_value
    switch $argv[1]
        case '*|*'
            string split '|' -- $argv[1]
        case DIR
            __fish_complete_directories (commandline -ct)
        case FILE PATH MOUNTPOINT SOCK S KEY
            __fish_complete_path (commandline -ct)
    end
end

function __cryo_complete
    set -l toks (commandline -opc)
    set -l cur (commandline -ct)
    set -l cryo $toks[1]
    set -l help ($cryo --help 2>/dev/null); or return
    set -l globals (printf '%s\n' $help | sed -n '/^Global options:/,/^$/p')
    set -l root
    set -l cmd
    set -l n (count $toks)
    set -l i 2
    while test $i -le $n
        set -l w $toks[$i]
        switch $w
            case --root -root
                set root --root $toks[(math $i + 1)]
                set i (math $i + 1)
            case '-*'
                test -n "$(__cryo_optarg "$globals" $w)"; and set i (math $i + 1)
            case '*'
                set cmd $w
                break
        end
        set i (math $i + 1)
    end

    if test -z "$cmd"
        set -l kind (__cryo_optarg "$globals" $toks[-1])
        if test $n -gt 1 -a -n "$kind"
            __cryo_value $kind
        else if string match -q -- '-*' $cur
            printf '%s\n' $globals | __cryo_opts
        else
            printf '%s\n' $help | string replace -rf '^  ([a-z][a-z0-9-]*)  +(.*)$' '$1\t$2'
        end
        return
    end

    set help ($cryo $cmd --help 2>/dev/null); or return
    set -l kind (__cryo_optarg "$help" $toks[-1])
    if test $n -gt $i -a -n "$kind"
        __cryo_value $kind
        return
    end
    if string match -q -- '-*' $cur
        printf '%s\n' $help | __cryo_opts
        return
    end
    set -l npos 0
    set i (math $i + 1)
    while test $i -le $n
        if string match -q -- '-*' $toks[$i]
            test -n "$(__cryo_optarg "$help" $toks[$i])"; and set i (math $i + 1)
        else
            set npos (math $npos + 1)
        end
        set i (math $i + 1)
    end
    test $npos -eq 0; or return
    set -l usage (printf '%s\n' $help | string replace -rf '^Usage: cryo [^ ]* ' '' | head -1 | string replace -ra '\[[^]]*\]' '')
    if string match -qr '(^|[ (|])ID([ )|]|$)' -- $usage
        $cryo $root list -q 2>/dev/null
    else
        __cryo_value (string split -n ' ' -- $usage)[1]
    end
end

complete -c cryo -f -a '(__cryo_complete)'
