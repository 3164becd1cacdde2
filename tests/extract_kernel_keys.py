"""Read the sysctl keys one kernel release has from its own sysctl tables (a maintainer's tool).

    python -m tests.extract_kernel_keys GIT_DIR [--rev HEAD]     # one release: a JSON listing
    python -m tests.extract_kernel_keys --catalog GIT_DIR...     # the kernel-keys catalog, YAML

Each GIT_DIR is a kernel tree's git directory (one release per tree). Every `ctl_table` array of
its C files is read: each entry's `procname`, its `mode` and its `.child` table; a table's
directory comes from the call that registers it (`register_sysctl*`, `register_net_sysctl*`,
`register_sysctl_paths` with a `ctl_path` array, a root table's nested children) or, for the
per-interface trees whose path is built at run time, from `_DYNAMIC` (the interface written
`*`). Preprocessor conditionals are ignored: a key any configuration or architecture builds is
listed, so the listing errs towards "exists" (a key the tables do not hold is never invented).
The catalog (`rules/catalog/kernel-keys.yaml`) is this tool's output over the trees cited there;
`tests/knowledge/test_kernel_keys.py` compares it with the running kernel's /proc/sys.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

# Directories whose path the kernel builds at run time (an interface's name): the table that
# holds their keys, by file and table (or struct member) name, and where it goes.
_DYNAMIC: dict[tuple[str, str], tuple[str, ...]] = {
    ("net/ipv4/devinet.c", "devinet_vars"): ("net/ipv4/conf/*",),
    ("net/ipv6/addrconf.c", "addrconf_vars"): ("net/ipv6/conf/*",),
    ("net/ipv6/addrconf.c", "addrconf_sysctl"): ("net/ipv6/conf/*",),
    ("net/core/neighbour.c", "neigh_vars"): ("net/ipv4/neigh/*", "net/ipv6/neigh/*"),
    ("net/mpls/af_mpls.c", "mpls_dev_table"): ("net/mpls/conf/*",),
}
# Entries whose names the kernel prints at run time (one per protocol family number).
_NUMBERED = {"net/netfilter/nf_log.c": "net.netfilter.nf_log.*"}
# neighbour.c: these entries exist under `default` only (neigh_sysctl_register() clears them
# for a device's table).
_NEIGH_DEFAULT_ONLY = frozenset({"gc_interval", "gc_thresh1", "gc_thresh2", "gc_thresh3"})
# Tables whose directory the kernel passes through a pointer (the conntrack protocols'
# `ctl_table`, the old compat tables): where they are registered.
_BY_NAME: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"compat"), "net/ipv4/netfilter"),
    (
        re.compile(r"^(tcp|udp|udplite|icmp|icmpv6|sctp|dccp|gre|generic)_sysctl_table$"),
        "net/netfilter",
    ),
    (re.compile(r"^ip_ct_sysctl_table$"), "net/ipv4/netfilter"),
    (re.compile(r"^nf_ct_ipv6_sysctl_table$"), "net/netfilter"),
    (re.compile(r"^ipv6_route_table_template$"), "net/ipv6/route"),
    (re.compile(r"^ipv6_icmp_table_template$"), "net/ipv6/icmp"),
)
# The module a key's file builds into where it is usually a module (the key exists only once
# it is loaded): the first prefix of the file's path that matches.
MODULES: tuple[tuple[str, str], ...] = (
    ("net/bridge/br_netfilter", "br_netfilter"),
    ("net/netfilter/ipvs/", "ip_vs"),
    ("net/netfilter/nf_conntrack", "nf_conntrack"),
    ("net/ipv4/netfilter/nf_conntrack", "nf_conntrack_ipv4"),
    ("net/ipv6/netfilter/nf_conntrack", "nf_conntrack_ipv6"),
    ("net/ipv6/netfilter/nf_defrag", "nf_defrag_ipv6"),
    ("net/netfilter/nf_log", "nf_log_common"),
    ("net/sctp/", "sctp"),
    ("net/dccp/", "dccp"),
    ("net/tipc/", "tipc"),
    ("net/rds/", "rds"),
    ("net/mpls/", "mpls_router"),
    ("net/vmw_vsock/", "vsock"),
)
_TABLE = re.compile(r"\b(?:struct\s+)?ctl_table\s+(\w+)\s*\[[^\]]*\]\s*(?:__\w+\s*)*=\s*\{")
_MEMBER = re.compile(r"\.(\w+_vars|addrconf_sysctl)\s*=\s*\{")
_PATH = re.compile(r"\bstruct\s+ctl_path\s+(\w+)\s*\[[^\]]*\]\s*(?:__\w+\s*)*=\s*\{")
_STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
_PROCNAME = re.compile(r'\.procname\s*=\s*"([^"]*)"')
_MODE = re.compile(r"\.mode\s*=\s*(0[0-7]+)\b")
_CHILD = re.compile(r"\.child\s*=\s*&?(\w+)")
_NAMED = r"(?:&?\w+(?:->\w+|\.\w+)*)"
_REGISTER_PATH = re.compile(
    r"\b(?:register_sysctl(?:_init|_sz)?|register_net_sysctl(?:_sz)?\s*\([^,;]+,"
    r"|__register_sysctl_table\s*\([^,;]+,|__register_sysctl_init)\s*\(?\s*\"([^\"]+)\"\s*,\s*("
    + _NAMED
    + r")"
)
_REGISTER_CTL_PATH = re.compile(
    r"\b(?:register_sysctl_paths|register_net_sysctl_rotable|"
    r"register_net_sysctl_table\s*\([^,;]+,)\s*\(?\s*(\w+)\s*,\s*(" + _NAMED + r")"
)
_BASE = re.compile(r"\bDECLARE_SYSCTL_BASE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_REGISTER_ROOT = re.compile(r"\bregister_sysctl_table\s*\(\s*(\w+)\s*\)")
_KMEMDUP = re.compile(r"\b(\w+)\s*=\s*kmemdup\s*\(\s*&?(\w+)")
_ASSIGN = re.compile(r"\b(\w+)\s*=\s*(\w+)\s*;")
_CALL_ASSIGN = re.compile(r"\b(\w+)\s*=\s*(?!kmemdup|kzalloc|kmalloc|kcalloc)(\w+)\s*\(")
_FUNC = re.compile(r"^[\w \t\*]*?\b(\w+)\s*\([^;{]*\)\s*\{", re.M)


_DEFINE = re.compile(r'^\s*#\s*define\s+(\w+)\s+"([^"]*)"\s*$', re.M)
_CHAR_CONST = re.compile(r'\bchar\s+(\w+)\s*\[\s*\]\s*=\s*"([^"]*)"')


def _constants(text: str) -> dict[str, str]:
    """The string constants a file names (`#define X "..."`, `char x[] = "..."`)."""
    return dict(_DEFINE.findall(text)) | dict(_CHAR_CONST.findall(text))


def _clean(text: str) -> str:
    """The C text without comments and preprocessor lines (continuations joined)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = text.replace("\\\n", " ")
    return "\n".join("" if line.lstrip().startswith("#") else line for line in text.split("\n"))


def _block(text: str, start: int) -> tuple[str, int]:
    """The text inside the braces opening at `start`, and the index after the closing one."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1) if '"' in text[i + 1 :] else len(text)
            while text[i - 1] == "\\" and text[i - 2] != "\\":
                i = text.index('"', i + 1)
        elif c in "{(":
            depth += 1
        elif c in "})":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
        i += 1
    return text[start + 1 :], len(text)


@dataclass
class Entry:
    name: str
    mode: int | None
    child: str | None


@dataclass
class Tree:
    """One release's tables, paths and registrations."""

    tables: dict[str, list[tuple[str, list[Entry]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    paths: dict[str, list[str]] = field(default_factory=dict)
    registered: list[tuple[str, str, str]] = field(default_factory=list)  # file, dir, table
    roots: list[tuple[str, str]] = field(default_factory=list)  # file, table
    makers: dict[str, str] = field(default_factory=dict)  # function: the table it copies
    unplaced: list[tuple[str, str]] = field(default_factory=list)


def _entries(body: str) -> list[Entry]:
    found: list[Entry] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "{":
            inner, i = _block(body, i)
            name = _PROCNAME.search(inner)
            if name:
                mode = _MODE.search(inner)
                child = _CHILD.search(inner)
                found.append(
                    Entry(name[1], int(mode[1], 8) if mode else None, child[1] if child else None)
                )
            continue
        if c.isalpha() or c == "_":
            m = re.match(r"\w+", body[i:])
            assert m is not None
            j = i + m.end()
            rest = body[j:].lstrip()
            if rest.startswith("("):
                inner, i = _block(body, j + body[j:].index("("))
                name = _STR.search(inner)
                mode = re.search(r"\b(0[0-7]{3})\b", inner)
                # DEVINET_SYSCTL_RO_ENTRY(MC_FORWARDING, "mc_forwarding"): the macro's name
                # carries the mode (0444) where its arguments do not
                read_only = mode is None and "_RO_" in f"{m[0]}_"
                if name:
                    found.append(
                        Entry(
                            name[1], 0o444 if read_only else int(mode[1], 8) if mode else None, None
                        )
                    )
                continue
            i = j
            continue
        if c == '"':
            i = body.index('"', i + 1) + 1
            continue
        i += 1
    return found


def read_file(tree: Tree, path: str, raw: str) -> None:
    constants = _constants(raw.replace("\\\n", " "))
    text = _clean(raw)
    if constants:  # a procname or a path given by a constant's name
        text = re.sub(
            r'"(?:[^"\\\n]|\\.)*"|\b\w+\b',  # a string literal stays as it is
            lambda m: json.dumps(constants[m[0]]) if m[0] in constants else m[0],
            text,
        )
    for pattern in (_TABLE, _MEMBER):
        for m in pattern.finditer(text):
            body, _ = _block(text, m.end() - 1)
            tree.tables[m[1]].append((path, _entries(body)))
    for m in _PATH.finditer(text):
        body, _ = _block(text, m.end() - 1)
        tree.paths[m[1]] = _PROCNAME.findall(body) or _STR.findall(body)
    variables: list[tuple[int, str, str]] = []
    for m in _KMEMDUP.finditer(text):
        variables.append((m.start(), m[1], m[2]))
    for m in _ASSIGN.finditer(text):
        variables.append((m.start(), m[1], m[2]))
    for m in _CALL_ASSIGN.finditer(text):
        variables.append((m.start(), m[1], "()" + m[2]))
    variables.sort()
    funcs = [(m.start(), m[1]) for m in _FUNC.finditer(text)]
    for start, name in funcs:
        body_start = text.index("{", start)
        body, _ = _block(text, body_start)
        dup = _KMEMDUP.search(body)
        if dup and re.search(r"\breturn\b", body):
            tree.makers[name] = dup[2]

    def resolve(name: str, at: int) -> str:
        name = name.lstrip("&").split("->")[-1].split(".")[-1]
        seen = 0
        while seen < 3:
            seen += 1
            if name in tree.tables and any(p == path for p, _ in tree.tables[name]):
                return name
            earlier = [v for v in variables if v[0] < at and v[1] == name and v[2] != name]
            if not earlier:
                return name
            name = earlier[-1][2]
        return name

    for m in _REGISTER_PATH.finditer(text):
        tree.registered.append((path, m[1], resolve(m[2], m.start())))
    for m in _REGISTER_CTL_PATH.finditer(text):
        tree.registered.append((path, "@" + m[1], resolve(m[2], m.start())))
    for m in _BASE.finditer(text):
        tree.registered.append((path, m[1], m[2]))
    for m in _REGISTER_ROOT.finditer(text):
        tree.roots.append((path, resolve(m[1], m.start())))


def _table(tree: Tree, name: str, near: str) -> tuple[str, list[Entry]] | None:
    found = tree.tables.get(name)
    if not found:
        return None
    same = [t for t in found if t[0] == near]
    return (same or found)[0]


def keys_of(tree: Tree) -> tuple[dict[str, tuple[str, int | None]], list[str]]:
    """Every key (dotted) with the file that defines it and its mode, and the tables no
    registration places."""
    keys: dict[str, tuple[str, int | None]] = {}
    placed: set[tuple[str, str]] = set()

    def walk(directory: str, name: str, near: str, depth: int = 0) -> None:
        found = _table(tree, name, near)
        if found is None or depth > 8:
            return
        file, entries = found
        placed.add((file, name))
        for entry in entries:
            if entry.child:
                walk(f"{directory}/{entry.name}".strip("/"), entry.child, file, depth + 1)
            elif entry.name:
                key = f"{directory}/{entry.name}".strip("/").replace("/", ".")
                keys.setdefault(key, (file, entry.mode))

    for file, directory, name in tree.registered:
        if name.startswith("()"):
            name = tree.makers.get(name[2:], name)
        if directory.startswith("@"):
            parts = tree.paths.get(directory[1:])
            if parts is None:
                continue
            directory = "/".join(parts)
        if "%" in directory:
            continue
        walk(directory, name, file)
    for file, name in tree.roots:
        walk("", name, file)
    for (file, name), places in _DYNAMIC.items():
        found = _table(tree, name, file)
        if found is None or found[0] != file:
            continue
        placed.add((file, name))
        for directory in places:
            for entry in found[1]:
                if entry.child or not entry.name:
                    continue
                place = directory
                if name == "neigh_vars" and entry.name in _NEIGH_DEFAULT_ONLY:
                    place = directory.replace("*", "default")
                key = f"{place}/{entry.name}".replace("/", ".")
                keys.setdefault(key, (file, entry.mode))
    for file, key in _NUMBERED.items():
        if any(f == file for tables in tree.tables.values() for f, _ in tables):
            keys.setdefault(key, (file, None))
    unplaced = []
    children = {e.child for tables in tree.tables.values() for _, es in tables for e in es}
    for name, tables in tree.tables.items():
        for file, entries in tables:
            if (file, name) in placed or name in children or not entries:
                continue
            directory = next((d for p, d in _BY_NAME if p.search(name)), None)
            if directory is None or not file.startswith("net/"):
                unplaced.append(f"{file}:{name}")
                continue
            for entry in entries:
                if entry.name and not entry.child:
                    key = f"{directory}/{entry.name}".replace("/", ".")
                    keys.setdefault(key, (file, entry.mode))
    return keys, sorted(unplaced)


def read_tree(git_dir: str, rev: str = "HEAD", under: str = "") -> Tree:
    """A release's tables; `under`, the folder of the git tree the kernel's tree is in."""
    prefix = f"{under.strip('/')}/" if under else ""
    listed = subprocess.run(
        [
            "git",
            f"--git-dir={git_dir}",
            "grep",
            "-l",
            "-E",
            "ctl_table|ctl_path",
            rev,
            "--",
            f"{prefix}*.c",
            f"{prefix}*.h",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    tree = Tree()
    names = [line.split(":", 1)[1] for line in listed]
    batch = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
        input="".join(f"{rev}:{n}\n" for n in names).encode(),
        capture_output=True,
        check=True,
    ).stdout
    at = 0
    for name in names:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        if header[-1] == b"missing":  # a snapshot's largest files may be absent
            at = header_end + 1
            continue
        size = int(header[2])
        body = batch[header_end + 1 : header_end + 1 + size].decode("utf-8", "replace")
        at = header_end + 1 + size + 1
        if name[len(prefix) :].startswith(("tools/", "Documentation/", "samples/")):
            continue
        read_file(tree, name[len(prefix) :], body)
    return tree


def module_of(file: str) -> str | None:
    return next((module for prefix, module in MODULES if file.startswith(prefix)), None)


def release_of(git_dir: str, rev: str = "HEAD", under: str = "") -> str:
    prefix = f"{under.strip('/')}/" if under else ""
    makefile = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{rev}:{prefix}Makefile"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    values = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d*)", makefile, re.M))
    parts = [values.get("VERSION", ""), values.get("PATCHLEVEL", ""), values.get("SUBLEVEL", "")]
    return ".".join(p for p in parts if p)


def series(release: str) -> str:
    """The release series a read tree stands for: 2.6.32.71 -> 2.6.32, 5.15.135 -> 5.15."""
    parts = release.split(".")
    return ".".join(parts[:3] if parts[:2] == ["2", "6"] else parts[:2])


def _runs(present: list[bool], names: list[str]) -> str:
    """The read releases a key is in, as ranges (' or ' between runs); '' for all."""
    runs, start = [], None
    for i, here in enumerate([*present, False]):
        if here and start is None:
            start = i
        elif not here and start is not None:
            low = f">={names[start]}" if start > 0 else ""
            high = f"<={names[i - 1]}" if i - 1 < len(names) - 1 else ""
            runs.append(",".join(p for p in (low, high) if p))
            start = None
    return " or ".join(runs)


def catalog(read: list[tuple[str, dict[str, Any]]]) -> str:
    """The kernel-keys catalog (YAML) of the releases read, oldest first: each key with the
    read releases that have it, its module, and where it is read-only."""
    names = [series(release) for release, _ in read]
    every = sorted({k for _, r in read for k in r["keys"]})
    lines = ["releases:"]
    for (release, r), name in zip(read, names, strict=True):
        lines.append(f'  "{name}": {{read: "{release}", commit: "{r["commit"]}"}}')
    lines.append("keys:")
    modules, read_only = {}, {}
    for key in every:
        present = [key in r["keys"] for _, r in read]
        lines.append(f'  {key}: "{_runs(present, names)}"')
        found = [r["keys"][key] for _, r in read if key in r["keys"]]
        module = next((f["module"] for f in found if f["module"]), None)
        if module:
            modules[key] = module
        ro = [
            key in r["keys"]
            and r["keys"][key]["mode"] is not None
            and not int(r["keys"][key]["mode"], 8) & 0o222
            for _, r in read
        ]
        if any(ro):
            read_only[key] = _runs(ro, names)
    lines.append("modules:")
    lines += [f"  {k}: {m}" for k, m in modules.items()]
    lines.append("read_only:")
    lines += [f'  {k}: "{r}"' for k, r in read_only.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "git_dir", nargs="+", help="GIT_DIR, or GIT_DIR:FOLDER (the kernel's folder)"
    )
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--catalog", action="store_true", help="write the catalog's data (YAML)")
    args = parser.parse_args(argv)
    out = {}
    for given in args.git_dir:
        git_dir, _, under = given.partition(":")
        tree = read_tree(git_dir, args.rev, under)
        keys, unplaced = keys_of(tree)
        commit = subprocess.run(
            ["git", f"--git-dir={git_dir}", "rev-parse", args.rev],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        out[release_of(git_dir, args.rev, under)] = {
            "commit": commit,
            "keys": {
                k: {"file": f, "mode": oct(m) if m is not None else None, "module": module_of(f)}
                for k, (f, m) in sorted(keys.items())
            },
            "unplaced": unplaced,
        }
    if args.catalog:
        order = sorted(out, key=lambda r: [int(p) for p in r.split(".")])
        sys.stdout.write(catalog([(r, out[r]) for r in order]))
        return 0
    json.dump(out, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
