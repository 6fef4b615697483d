#!/usr/bin/env python3
"""Checks that every reference to the documentation resolves.

Code comments cite the documentation by file and section title, and the
markdown files link to each other. This finds, in src/, include/, python/,
scripts/, tests/, examples/, cmake/, CMakeLists.txt, README.md and docs/*.md:

  - README followed by a quoted section title (also README.md, and with a
    comma before the quote): the title must be a heading of README.md;
  - docs/NAME.md, optionally followed by a quoted section title: the file
    must exist, and the title must be one of its headings;
  - in README.md and docs/*.md, links to local .md files, optionally with a
    #fragment: the file must exist and the fragment must be the GitHub anchor
    of one of its headings.

A section title matches a markdown heading whose text, without its leading
#'s, equals it exactly (case-sensitive). Prints each reference that does not
resolve as FILE:LINE: ... and exits 1; else prints one summary line and
exits 0.

    /usr/bin/python3 scripts/check_doc_refs.py [REPO_ROOT]
"""
import os
import re
import sys

SCAN_DIRS = ["src", "include", "python", "scripts", "tests", "examples", "cmake"]
SCAN_FILES = ["CMakeLists.txt"]
SKIP_DIRS = {".git", "node_modules", "__pycache__", "build", "fuzz_corpus", "fuzz_regressions"}
MAX_BYTES = 2_000_000

# README "Title", README.md "Title", README, "Title"
README_REF = re.compile(r'\bREADME(?:\.md)?,?[ \t]+"([^"\n]+)"')
# docs/name.md, optionally followed by "Title" (not onnx/docs/..., not a path ending in docs/)
DOCS_REF = re.compile(r'(?<![\w/.-])docs/([\w.-]+\.md)(?:,?[ \t]+"([^"\n]+)")?')
# [text](target) in markdown
MD_LINK = re.compile(r'\[[^\]\n]*\]\(([^)\s]+)\)')
HEADING = re.compile(r'^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$')
FENCE = re.compile(r'^[ \t]*(```|~~~)')


def headings(path, cache={}):
    """The heading texts of a markdown file (outside fenced code), or None if it is missing."""
    if path not in cache:
        if not os.path.isfile(path):
            cache[path] = None
        else:
            found, fenced = [], False
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if FENCE.match(line):
                        fenced = not fenced
                        continue
                    m = None if fenced else HEADING.match(line.rstrip("\n"))
                    if m:
                        found.append(m.group(2).strip())
            cache[path] = found
    return cache[path]


def github_anchor(title):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`", "", title).lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    result, seen = set(), {}
    for title in headings(path) or []:
        base = github_anchor(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def source_files(root):
    self_path = os.path.abspath(__file__)
    for d in SCAN_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
            dirnames[:] = sorted(x for x in dirnames if x not in SKIP_DIRS)
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if os.path.abspath(path) != self_path:
                    yield path
    for name in SCAN_FILES:
        if os.path.isfile(os.path.join(root, name)):
            yield os.path.join(root, name)


def markdown_files(root):
    yield os.path.join(root, "README.md")
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        for name in sorted(os.listdir(docs)):
            if name.endswith(".md"):
                yield os.path.join(docs, name)


def read_text(path):
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None  # binary or unreadable: no references


def check_section(root, doc, section, where, problems):
    path = os.path.join(root, doc)
    found = headings(path)
    if found is None:
        problems.append(f"{where}: {doc} does not exist")
    elif section is not None and section not in found:
        problems.append(f'{where}: {doc} has no section "{section}"')


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems, checked = [], 0
    md = [p for p in markdown_files(root) if os.path.isfile(p)]
    for path in list(source_files(root)) + md:
        text = read_text(path)
        if text is None:
            continue
        rel = os.path.relpath(path, root)
        is_md = path in md
        fenced = False
        for number, line in enumerate(text.split("\n"), 1):
            where = f"{rel}:{number}"
            for m in README_REF.finditer(line):
                checked += 1
                check_section(root, "README.md", m.group(1), where, problems)
            for m in DOCS_REF.finditer(line):
                checked += 1
                check_section(root, "docs/" + m.group(1), m.group(2), where, problems)
            if not is_md:
                continue
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                    continue
                file_part, _, fragment = target.partition("#")
                if file_part and not file_part.endswith(".md"):
                    continue  # a link to a source file or folder
                checked += 1
                doc_path = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                doc = os.path.relpath(doc_path, root)
                if headings(doc_path) is None:
                    problems.append(f"{where}: link to {target}: {doc} does not exist")
                elif fragment and fragment not in anchors(doc_path):
                    problems.append(f"{where}: link to {target}: {doc} has no heading with anchor #{fragment}")
    for p in problems:
        print(p)
    if problems:
        print(f"doc refs: {checked} checked, {len(problems)} do not resolve", file=sys.stderr)
        return 1
    print(f"doc refs: {checked} checked, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
