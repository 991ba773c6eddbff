#!/usr/bin/env python3
"""Keeps the documentation honest: checks README.md and docs/*.md against the repository.

    python3 scripts/check-docs.py [--nmt target/release/nmt]

Exits 1 and lists every problem (file:line: what), or prints a summary and exits 0. Python 3
standard library only. CI runs it after `cargo test --release --workspace` (.ci/run), which
builds the binary it asks (default `target/release/nmt` of this repository).

What is checked, in README.md and docs/*.md except the docs/*-HISTORY.md pages (those record
what was run in the past, with files and flags that have since gone, on purpose):

1. Paths. A path is a token of the text (prose, inline code or code block) that
   - starts with `../`: always a problem, a path outside the repository;
   - starts with a top-level entry of the repository followed by `/` (`docs/…`, `crates/…`,
     `scripts/…`, `configs/…`, `data/…`, `bench/…`, `.ci/…`; taken from `git ls-files`): the
     file or folder must be tracked by git, as on a clean clone (a glob such as `configs/*-small.toml`
     must match at least one);
   - otherwise contains a `/` and ends in a source extension (`.rs .py .sh .md .toml .yaml
     .yml`): a path relative to some crate or folder (`model/feedback.rs`, `tests/infer.rs`),
     which must be the end of at least one tracked file's path; or ends in `/` and has two or
     more components (`crates/nmt/src/infer/` is checked as above, `model/x/` as a folder
     that some tracked path ends with).
   Braces are expanded as the shell does (`configs/grconv-{small,paper}.toml` is two paths).
   Not paths, and not checked: URLs (`scheme://…`); absolute paths (`/usr/bin/time`, `/tmp/x`,
   mounts of the examples); paths under `runs/`, `demo-model/`, `target/` and `~`, which the
   documented commands create; tokens with a placeholder: a component in capitals (`MODEL`,
   `MODEL_DIR/data`, `runs/ablation/ARM/done`), `$`, `<`, `>`, `…` or `...`; files
   of other projects named in EXTERNAL below.
2. Scripts. Every path under `scripts/` with the extension `.sh` or `.py` that a page names
   must exist and be executable, unless its first line is not a `#!` line (a library that
   is sourced or imported, such as `scripts/jobs.sh`).
3. `nmt` commands. In code blocks, and in inline code that begins with `nmt `, every call of
   `nmt` (also as `target/release/nmt`, `./target/release/nmt`, after `VAR=value`, `mpirun …`
   or a pipe) has its subcommand (and nested subcommand: `nmt eval bleu`) and every option
   checked against `nmt <sub> --help` of the binary: an option that the help does not list is
   a problem. Arguments end at `#` (a comment), `|`, `;`, `&&`, `<` or `>`; `[`/`]` around an
   optional flag are ignored. Commands of another binary (`target/cuda/release/nmt`,
   `.gpu/nmt`) are checked the same way, since they are the same CLI.
4. docs/CONFIG.md. The keys of its `[model]`, `[data]`, `[train]` and `[search]` tables must
   be exactly the fields of `ModelToml`, `DataConfig`, `TrainConfig` and `SearchConfig` in
   `crates/nmt/src/config/` (serde renames applied), so a key added in the code fails CI
   until the page lists it.
5. Figures against their logs (README.md; issue 77). A table row whose cells cite a footnote
   `[N]`, where the page defines `[N] docs/logs/PATH`: each figure of its other cells, every
   number with decimals (`28.85`) and every whole number of four digits or more (`2 401`,
   `2401`); and a list item (with its indented lines) that names one or more `docs/logs/PATH`:
   each number with decimals in it (dates and versions aside). Each must occur as a number in a
   file of one of its logs (the file, or any file under the folder). A figure that differs
   from its log fails CI; rows marked "no log" are not checked.
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_EXT = (".rs", ".py", ".sh", ".md", ".toml", ".yaml", ".yml")
CREATED = ("runs/", "demo-model/", "target/", "~")
# Files of other projects that the pages name by their own paths.
EXTERNAL = {
    "quantized/repack_x86.rs",  # candle-core's
}
PATH_RE = re.compile(r"(?<![\w/.~$-])((?:\.\./|\.ci/|\.?[\w-][\w.-]*/)[\w.*?/+{},-]*[\w*/}])")
URL_RE = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
PLACEHOLDER_RE = re.compile(r"(^|/)[A-Z][A-Z0-9_]*(/|$)|[$<>…]|\.\.\.")


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in out.stdout.splitlines() if os.path.exists(os.path.join(ROOT, f))]


def pages():
    files = [os.path.join(ROOT, "README.md")]
    docs = os.path.join(ROOT, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs)
                    if f.endswith(".md") and not f.endswith("-HISTORY.md"))
    return files


def code_regions(text):
    """Yields (line number, code text, is_block) for code blocks' lines and inline code spans."""
    in_block = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            yield n, line, True
        else:
            for m in re.finditer(r"`([^`]+)`", line):
                yield n, m.group(1), False


def braces(tok):
    """`configs/x-{small,paper}.toml` → both names (one level, as the shell does)."""
    m = re.search(r"\{([^{}]*)\}", tok)
    if not m:
        return [tok]
    return [n for alt in m.group(1).split(",") for n in braces(tok[:m.start()] + alt + tok[m.end():])]


def suffix_exists(tok, paths):
    if any(c in tok for c in "*?["):
        return any(fnmatch.fnmatch(f, "*/" + tok) for f in paths)
    return any(f.endswith("/" + tok) for f in paths)


def check_paths(rel, text, files, dirs, tops, problems):
    for n, line in enumerate(text.splitlines(), 1):
        line = URL_RE.sub(" ", line)
        for m in PATH_RE.finditer(line):
            whole = m.group(1).rstrip(".,;:)")
            if "{" in whole and "}" not in whole:
                whole = whole.split("{", 1)[0]
            for tok in braces(whole):
                check_path(rel, n, tok, files, dirs, tops, problems)


def check_path(rel, n, tok, files, dirs, tops, problems):
    if tok.startswith("../"):
        problems.append(f"{rel}:{n}: {tok}: a path outside the repository")
        return
    if tok.startswith(CREATED) or PLACEHOLDER_RE.search(tok) or tok in EXTERNAL:
        return
    top = tok.split("/", 1)[0]
    if top in tops:
        name = tok.rstrip("/")
        if any(c in name for c in "*?["):
            ok = any(fnmatch.fnmatch(f, name) for f in files)
        else:
            # Tracked, not merely present: an empty or untracked folder here is missing on a
            # clean clone (docs/logs/bf16-11000/ failed CI that way on 2026-11-27).
            ok = name in dirs or name in files
        if not ok:
            problems.append(f"{rel}:{n}: {tok}: no such file or folder in the repository")
            return
        if name.startswith("scripts/") and name.endswith((".sh", ".py")) and os.path.isfile(os.path.join(ROOT, name)):
            path = os.path.join(ROOT, name)
            with open(path, "rb") as fh:
                shebang = fh.read(2) == b"#!"
            if shebang and not os.access(path, os.X_OK):
                problems.append(f"{rel}:{n}: {tok}: script is not executable")
    elif tok.endswith(SOURCE_EXT) and "/" in tok.strip("/"):
        if not suffix_exists(tok, files):
            problems.append(f"{rel}:{n}: {tok}: no tracked file ends with this path")
    elif tok.endswith("/") and tok.count("/") >= 2 and not suffix_exists(tok.rstrip("/"), dirs):
        problems.append(f"{rel}:{n}: {tok}: no tracked folder ends with this path")


class Cli:
    """`nmt … --help`, cached: each (sub)command's options and nested subcommands."""

    def __init__(self, binary):
        self.binary = binary
        self.cache = {}

    def help(self, words):
        key = tuple(words)
        if key not in self.cache:
            out = subprocess.run([self.binary, *words, "--help"], capture_output=True, text=True)
            text = out.stdout if out.returncode == 0 else None
            if text is None:
                self.cache[key] = None
            else:
                opts = set(re.findall(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)", text))
                subs = set()
                section = None
                for line in text.splitlines():
                    if re.match(r"^\S.*:$", line):
                        section = line.rstrip(":").strip()
                        continue
                    m = re.match(r"^  ([a-z][\w-]*)\s", line)
                    if section == "Commands" and m:
                        subs.add(m.group(1))
                self.cache[key] = (opts, subs)
        return self.cache[key]


NMT_CALL = re.compile(r"(?:^|[\s|;&(])(?:[\w./-]*/)?nmt\s+([a-z][\w-]*)(.*)$")


def check_commands(rel, text, cli, problems, counts):
    for n, code, is_block in code_regions(text):
        if not is_block and not code.startswith("nmt "):
            continue
        rest = code
        while True:
            m = NMT_CALL.search(rest)
            if not m:
                break
            sub, tail = m.group(1), m.group(2)
            rest = tail
            top = cli.help([])
            if top is None:
                problems.append(f"{cli.binary} --help failed")
                return
            if sub not in top[1]:
                # Prose in a code comment ("the nmt Python package") is not a call; a line or
                # inline code that starts with `nmt` is.
                start = code.lstrip()
                if start.startswith("nmt ") and start.split()[1] == sub:
                    problems.append(f"{rel}:{n}: nmt {sub}: not a subcommand of nmt")
                continue
            words = [sub]
            args = re.split(r"\s#|\||;|&&|<|>", tail, maxsplit=1)[0].split()
            info = cli.help(words)
            if info and args and info[1] and args[0] in info[1]:
                words.append(args.pop(0))
                info = cli.help(words)
            if info is None:
                problems.append(f"{rel}:{n}: nmt {' '.join(words)} --help failed")
                continue
            counts[0] += 1
            for a in args:
                a = a.strip("[]")
                if not a.startswith("-") or a in ("-", "--") or re.match(r"^-\d", a):
                    continue
                flag = a.split("=", 1)[0]
                if flag not in info[0]:
                    problems.append(f"{rel}:{n}: nmt {' '.join(words)} {flag}: not an option of `nmt {' '.join(words)}`")


def struct_fields(src, name):
    m = re.search(r"struct " + name + r"\s*\{(.*?)\n\}", src, re.S)
    if not m:
        return None
    keys, rename = set(), None
    for line in m.group(1).splitlines():
        r = re.search(r'#\[serde\([^]]*rename\s*=\s*"([^"]+)"', line)
        if r:
            rename = r.group(1)
        f = re.match(r"\s*(?:pub\s+)?(\w+)\s*:", line)
        if f and not line.strip().startswith("//"):
            keys.add(rename or f.group(1))
            rename = None
    return keys


def check_config(problems):
    cdir = os.path.join(ROOT, "crates", "nmt", "src", "config")
    src = "".join(open(os.path.join(cdir, f), encoding="utf-8").read() for f in sorted(os.listdir(cdir)) if f.endswith(".rs"))
    doc_path = os.path.join(ROOT, "docs", "CONFIG.md")
    doc = open(doc_path, encoding="utf-8").read()
    for section, struct in (("model", "ModelToml"), ("data", "DataConfig"), ("train", "TrainConfig"), ("search", "SearchConfig")):
        code = struct_fields(src, struct)
        if code is None:
            problems.append(f"crates/nmt/src/config: struct {struct} not found")
            continue
        m = re.search(r"\*\*\[" + section + r"\]\*\*[^\n]*\n((?:\|[^\n]*\n)+)", doc, re.S)
        if not m:
            problems.append(f"docs/CONFIG.md: no [{section}] table")
            continue
        documented = set()
        for row in m.group(1).splitlines()[2:]:
            first = row.split("|")[1]
            documented |= set(re.findall(r"`(\w+)`", first))
        for k in sorted(code - documented):
            problems.append(f"docs/CONFIG.md: [{section}] key `{k}` ({struct}) is not documented")
        for k in sorted(documented - code):
            problems.append(f"docs/CONFIG.md: [{section}] key `{k}` is not a field of {struct}")


FIGURE_RE = re.compile(r"(?<![\w.])(\d+\.\d+|\d{1,3}(?: \d{3})+|\d{4,})(?![\w])")
FOOTNOTE_RE = re.compile(r"\[(\d+)\]\s+(docs/logs/[\w./-]*[\w/])")
LOG_RE = re.compile(r"docs/logs/[\w./-]*[\w/]")


def log_numbers(path, cache={}):
    """Every number written in the log PATH (a file, or every file under a folder), as text."""
    if path not in cache:
        full = os.path.join(ROOT, path)
        files = [full] if os.path.isfile(full) else [os.path.join(d, f) for d, _, fs in os.walk(full) for f in fs]
        nums = set()
        for f in files:
            with open(f, encoding="utf-8", errors="replace") as h:
                nums.update(re.findall(r"\d+(?:\.\d+)?", h.read()))
        cache[path] = nums
    return cache[path]


def figures_in(text):
    """The figures of TEXT (FIGURE_RE), digit groups joined (`2 401` is `2401`)."""
    return [m.replace(" ", "") for m in FIGURE_RE.findall(re.sub(r"docs/logs/\S+", "", text))]


def list_items(lines):
    """(first line number, text) of each list item: a `- ` line and its indented continuation."""
    items, cur = [], None
    for n, line in enumerate(lines, 1):
        if re.match(r"\s*- ", line):
            cur = [n, line]
            items.append(cur)
        elif cur is not None and line.startswith("  ") and line.strip():
            cur[1] += " " + line.strip()
        else:
            cur = None
    return items


def check_figures(rel, text, problems):
    notes = {n: p.rstrip(".") for n, p in FOOTNOTE_RE.findall(text)}
    lines = text.split("\n")
    checks = []  # (line, the logs named, the figures shown)
    for n, line in enumerate(lines, 1):
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            refs = [r for c in cells for r in re.findall(r"^\[(\d+)\]$", c)]
            if refs:
                # Cells joined with their bar, so that two cells (threads `1`, updates `837`)
                # never read as one grouped figure (`1 837`).
                shown = " | ".join(c for c in cells[1:] if not re.fullmatch(r"\[\d+\]", c))
                checks.append((n, [notes.get(r) for r in refs], figures_in(shown)))
    for n, item in list_items(lines):
        if LOG_RE.search(item):
            # In prose only the figures with decimals: whole numbers there are counts of verses,
            # years and sizes as often as results.
            shown = re.sub(r"docs/logs/\S+|\d{4}-\d{2}-\d{2}|\d+(?:\.\d+){2,}", "", item)
            checks.append((n, LOG_RE.findall(item), [f for f in figures_in(shown) if "." in f]))
    for n, logs, figs in checks:
        missing = [log for log in logs if log is None or not os.path.exists(os.path.join(ROOT, log))]
        if missing:
            problems.append(f"{rel}:{n}: a figure's log {missing[0] or '(footnote undefined)'} does not exist")
            continue
        known = set().union(*(log_numbers(log) for log in logs))
        for fig in figs:
            trimmed = fig.rstrip("0").rstrip(".") if "." in fig else fig  # 49.80 written 49.8
            if fig not in known and trimmed not in known:
                problems.append(f"{rel}:{n}: the figure {fig} is in none of its logs ({', '.join(logs)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nmt", default=os.path.join(ROOT, "target", "release", "nmt"))
    args = ap.parse_args()
    if not os.access(args.nmt, os.X_OK):
        print(f"check-docs: no nmt binary at {args.nmt} (cargo build --release -p nmt-cli)", file=sys.stderr)
        return 1
    files = tracked()
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    tops = {f.split("/", 1)[0] for f in files if "/" in f}
    problems, counts = [], [0]
    cli = Cli(args.nmt)
    checked = pages()
    for page in checked:
        rel = os.path.relpath(page, ROOT)
        text = open(page, encoding="utf-8").read()
        check_paths(rel, text, files, dirs, tops, problems)
        check_commands(rel, text, cli, problems, counts)
    check_config(problems)
    check_figures("README.md", open(os.path.join(ROOT, "README.md"), encoding="utf-8").read(), problems)
    if problems:
        print(f"check-docs: {len(problems)} problem(s) ({len(checked)} pages, {counts[0]} nmt commands checked):")
        for p in problems:
            print("  " + p)
        return 1
    print(f"check-docs: {len(checked)} pages, {counts[0]} nmt commands, docs/CONFIG.md keys, README figures against their logs: all good")
    return 0


if __name__ == "__main__":
    sys.exit(main())
