#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write a first draft of cryo-COMMAND.8.scd from `cryo COMMAND --help`.

    python3 runtime/cli/man/new-page.py build/cryo COMMAND > runtime/cli/man/cryo-COMMAND.8.scd

The draft has the summary of `cryo --help`, the usage lines as SYNOPSIS, the
help's prose as DESCRIPTION and one OPTIONS term per option line of the help
(`  --opt ARG   text`). Options that the help names only in its usage line
or prose still need a term: tests/host/package_man.sh lists them. Edit the
draft before committing it (the help's telegraphic style is not a page's).
"""
import re
import subprocess
import sys


def inline(s):
    """Options in bold."""
    return re.sub(r'(?<![\w`-])(--?[a-zA-Z][\w-]*)', r'*\1*', s)


def synopsis(line):
    out = []
    for w in re.split(r'(\s+|[\[\]()|])', line):
        if not w or w.isspace() or w in '[]()|':
            out.append(w)
        elif w.startswith('-') and w != '--':
            out.append('*%s*' % w)
        elif re.match(r'^[A-Z][A-Z.]*$', w):
            out.append('_%s_' % w)
        elif w == 'cryo':
            out.append('*cryo* [_GLOBAL OPTIONS_]')
        elif re.match(r'^[a-z][a-z-]*$', w):
            out.append('*%s*' % w)
        else:
            out.append(w)
    return ''.join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: new-page.py CRYO-BINARY COMMAND')
    cryo, cmd = sys.argv[1:]
    top = subprocess.run([cryo, '--help'], capture_output=True, text=True, check=True).stdout
    summary = dict(re.findall(r'(?m)^  ([a-z][a-z0-9-]*)  +(.*)$', top)).get(cmd, 'TODO')
    text = subprocess.run([cryo, cmd, '--help'], capture_output=True, text=True).stdout
    usage, desc, opts, exits = [], [], [], []
    for line in text.splitlines():
        if line.startswith('Usage: '):
            usage.append(line[7:].strip())
        elif usage and not desc and not opts and re.match(r'^\s+cryo ', line):
            usage.append(line.strip())
        elif re.match(r'^\s+-', line):
            m = re.match(r'^\s+((?:-\w, )?--?[\w-]+(?: [A-Z]+| [a-z]+(?:\|[a-z]+)+)?)(?:\s{2,}(.*))?$', line)
            opts.append([m.group(1), m.group(2) or ''] if m else [line.strip(), ''])
        elif opts and re.match(r'^\s{6,}\S', line):
            opts[-1][1] += ' ' + line.strip()
        elif line.startswith('Exit status') or (exits and line.strip()):
            exits.append(line.strip())
        elif line.strip() != 'Options:':
            desc.append(line)
    out = ['cryo-%s(8)\n\n# NAME\n\ncryo-%s - %s\n\n# SYNOPSIS\n\n' % (cmd, cmd, summary)]
    out.append(' ++\n'.join(synopsis(u) for u in usage) + '\n')
    out.append('\n# DESCRIPTION\n\n%s\n' % inline('\n'.join(desc).strip() or 'TODO'))
    if opts:
        out.append('\n# OPTIONS\n')
        for name, body in opts:
            words = name.split(' ')
            term = ', '.join('*%s*' % w.strip(',') for w in words if w.startswith('-'))
            args = [w for w in words if not w.startswith('-')]
            if args:
                term += ' _%s_' % args[0]
            body = (body[:1].upper() + body[1:]) if body else 'TODO'
            out.append('\n%s\n\t%s\n' % (term, inline(body if body.endswith('.') else body + '.')))
    if exits:
        out.append('\n# EXIT STATUS\n\n%s\n' % inline(re.sub(r'^Exit status: *', '', ' '.join(exits))))
    out.append('\n# SEE ALSO\n\n*cryo*(8)\n')
    sys.stdout.write(''.join(out))


if __name__ == '__main__':
    main()
