#!/usr/bin/env python3
"""Calls flow down (STYLE.md): no file of server/ or cli/ calls back into a file that calls it.

Builds the file-level graph of who names whom: file A -> file B when A's code names a function
that B defines (a call, or a function put in a table: a table entry is a call made later).
Then every strongly connected set of more than one file is a circle. Prints each circle with
one named function per arrow; exits 1 when there is one. Comments and strings are skipped;
a function is "defined" by a line at column 0 that opens a non-static function body.
"""
import os
import re
import sys

ROOTS = ("server", "cli")
DEF_RE = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;]*$")
NAME_RE = re.compile(r"\b([A-Za-z_]\w*)\b")


def strip(text):
    """The text without comments, string and character literals (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(top):
    for root in ROOTS:
        for d, _, files in os.walk(os.path.join(top, root)):
            for f in sorted(files):
                if f.endswith(".c"):
                    yield os.path.relpath(os.path.join(d, f), top)


def main():
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    code = {p: strip(open(os.path.join(top, p), encoding="utf-8").read()) for p in sources(top)}
    owner = {}
    for path, text in code.items():
        lines = text.split("\n")
        for k, line in enumerate(lines):
            m = DEF_RE.match(line)
            if not m or line.rstrip().endswith(";"):
                continue
            rest = "\n".join(lines[k:k + 8])
            if "{" in rest.split(";")[0]:
                owner.setdefault(m.group(1), path)
    edges = {p: {} for p in code}
    for path, text in code.items():
        for name in set(NAME_RE.findall(text)):
            other = owner.get(name)
            if other and other != path:
                edges[path].setdefault(other, name)
    # Tarjan's strongly connected components, iteratively.
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for start in sorted(code):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    for comp in comps:
        print("calls: a circle of %d files:" % len(comp))
        for a in comp:
            for b, name in sorted(edges[a].items()):
                if b in comp:
                    print("  %s -> %s (%s)" % (a, b, name))
    if comps:
        return 1
    print("calls: ok (%d files, no circles)" % len(code))
    return 0


if __name__ == "__main__":
    sys.exit(main())
