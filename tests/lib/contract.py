#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""docs/runtime-contract.md, read by the tests that hold cryo to it.

    contract.py check CRYO_BIN SUITE_DIR [HOST_TESTS_DIR]
        Every row of the command tables names a command that `cryo --help`
        lists and options that `cryo COMMAND --help` names; every test a
        row names exists (a runc suite test: `FILE.bats: NAME`, found in
        SUITE_DIR; a cryo host test: `host/NAME`); and each test exercises
        what its row is about: one of the row's options (else its command)
        is written in the test (its body, the file's helper functions and
        setup, runc's helpers.bash) or in the host test's script. The
        exceptions are at most MAX_EXCEPTIONS, each an existing test.
        Prints one line per problem; exit 1 if any.
    contract.py exceptions
        The exceptions, one `FILE.bats<TAB>NAME` a line.

The document's shape: command tables under `## Commands` (a `### cryo
COMMAND` heading each, `(global options)` for the global ones) with the
columns | argument | contract | checked by |; the `## Exceptions` table
with | test | reason |. Code spans (`...`) carry what is read: options
and arguments in the first column, tests in the last (several: comma
separated).
"""
import os
import re
import subprocess
import sys

SRC = os.environ.get("CRYO_SRC") or os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(SRC, "docs", "runtime-contract.md")
MAX_EXCEPTIONS = 10
OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
TEST = re.compile(r"^([\w.-]+\.bats): (.+)$|^host/([\w-]+)$")


def read_doc():
    """(rows, exceptions): rows are (command, options, text, tests, line)."""
    rows, exceptions = [], []
    section = command = None
    with open(DOC) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("## "):
                section, command = line[3:].strip(), None
                continue
            m = re.match(r"^### (?:cryo (\S+)|\(global options\))\s*$", line)
            if m and section == "Commands":
                command = m.group(1) or ""
                continue
            if not line.startswith("|") or re.match(r"^\|[\s:|-]+\|$", line):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if section == "Commands" and command is not None and len(cells) == 3:
                if cells[0].lower() == "argument":
                    continue
                spans = re.findall(r"`([^`]+)`", cells[0])
                opts = [o for s in spans for o in OPTION.findall(s.split()[0] if s.split() else "")]
                tests = re.findall(r"`([^`]+)`", cells[2])
                rows.append((command, opts, cells[0], tests, n))
            elif section == "Exceptions" and len(cells) == 2 and cells[0].lower() != "test":
                t = re.findall(r"`([^`]+)`", cells[0])
                exceptions.append((t[0] if t else cells[0], cells[1], n))
    return rows, exceptions


def bats_tests(path):
    """{name: body} of a .bats file, and the rest of the file (helpers, setup)."""
    tests, rest, name, body = {}, [], None, []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r'^@test "(.*)" \{\s*$', line)
            if m:
                # the name is not the code: a test called "--bundle" uses nothing
                name, body = m.group(1), []
                continue
            if name is not None:
                body.append(line)
                if line.startswith("}"):
                    tests[name] = "".join(body)
                    name = None
                continue
            rest.append(line)
    return tests, "".join(rest)


def help_options(cryo, command):
    args = [cryo, command, "--help"] if command else [cryo, "--help"]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    if not command:
        # the global options are the block under "Global options:"
        m = re.search(r"^Global options:\n(.*?)(?:\n\n|\Z)", out, re.S | re.M)
        out = m.group(1) if m else ""
    return set(OPTION.findall(out))


def check(cryo, suite, host_dir):
    rows, exceptions = read_doc()
    problems = []
    top = subprocess.run([cryo, "--help"], capture_output=True, text=True).stdout
    commands = set(re.findall(r"^  ([a-z][a-z0-9-]*)  ", top, re.M))
    helpers = open(os.path.join(suite, "helpers.bash"), errors="replace").read()
    cache, helps = {}, {}

    def haystack(ref):
        m = TEST.match(ref)
        if not m:
            return None, f"`{ref}` is neither `FILE.bats: NAME` nor `host/NAME`"
        if m.group(3):
            p = os.path.join(host_dir, m.group(3) + ".sh")
            if not os.path.exists(p):
                return None, f"no host test {p}"
            return open(p, errors="replace").read(), None
        f = os.path.join(suite, m.group(1))
        if f not in cache:
            if not os.path.exists(f):
                return None, f"no file {m.group(1)} in runc's suite"
            cache[f] = bats_tests(f)
        tests, rest = cache[f]
        if m.group(2) not in tests:
            return None, f"no test \"{m.group(2)}\" in {m.group(1)}"
        return tests[m.group(2)] + rest + helpers, None

    if not rows:
        problems.append(f"{DOC}: no command table rows found")
    for command, opts, text, tests, n in rows:
        where = f"docs/runtime-contract.md:{n}"
        if command and command not in commands:
            problems.append(f"{where}: `cryo {command}` is not a command of `cryo --help`")
            continue
        if command not in helps:
            helps[command] = help_options(cryo, command)
        for o in opts:
            if o not in helps[command]:
                problems.append(f"{where}: {o} is not an option of `cryo {command} --help`")
        if not tests:
            problems.append(f"{where}: {text}: no test named")
        for ref in tests:
            hay, why = haystack(ref)
            if hay is None:
                problems.append(f"{where}: {why}")
                continue
            if opts:
                # a long option counts in either spelling, -root or --root; a
                # command's option on a line that runs that command
                spell = [re.escape(o) if not o.startswith("--") else "--?" + re.escape(o[2:]) for o in opts]
                lines = [l for l in hay.splitlines()
                         if not command or re.search(r"(?<![\w-])" + re.escape(command) + r"(?![\w-])", l)]
                if not any(re.search(r"(?<![\w-])" + x + r"(?![\w-])", l) for x in spell for l in lines):
                    problems.append(f"{where}: `{ref}` does not use {'/'.join(opts)} with `{command}`")
            elif command and not re.search(r"(?<![\w-])" + re.escape(command) + r"(?![\w-])", hay):
                problems.append(f"{where}: `{ref}` does not run `{command}`")
    if len(exceptions) > MAX_EXCEPTIONS:
        problems.append(f"{len(exceptions)} exceptions: at most {MAX_EXCEPTIONS}")
    for ref, reason, n in exceptions:
        hay, why = haystack(ref)
        if hay is None:
            problems.append(f"docs/runtime-contract.md:{n}: exception: {why}")
        if len(reason) < 20:
            problems.append(f"docs/runtime-contract.md:{n}: exception `{ref}` needs its reason")
    for p in problems:
        print(p)
    print(f"# {len(rows)} contract rows, {len(exceptions)} exceptions, {len(problems)} problems")
    return 1 if problems else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "exceptions":
        for ref, _, _ in read_doc()[1]:
            m = TEST.match(ref)
            if m and m.group(1):
                print(f"{m.group(1)}\t{m.group(2)}")
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "check":
        host = sys.argv[4] if len(sys.argv) > 4 else os.path.join(SRC, "tests", "host")
        return check(sys.argv[2], sys.argv[3], host)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
