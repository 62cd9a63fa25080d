"""Generate README.md's API tables from the code: the supported fluid APIs (minifluid.compat.supported_api)
and what is not supported yet, with the written replacements (minifluid/compat/hints.py, the same tables
the compat layer's errors come from).

Usage:  python tools/gen_api_table.py          # rewrite the tables in README.md
        python tools/gen_api_table.py --check  # exit 1 if a table in README.md is stale
"""
import pathlib
import sys

from minifluid.compat import MODULE_MAP, supported_api
from minifluid.compat.hints import NOT_SUPPORTED_YET, REPLACEMENTS

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _short(module):
    """paddle.fluid.layers -> fluid.layers, as scripts written `import paddle.fluid as fluid` spell it."""
    return module[len("paddle."):] if module.startswith("paddle.fluid") else module


def api_table():
    rows = ["| legacy module | minifluid module | names |", "| --- | --- | --- |"]
    for module, names in supported_api().items():
        rows.append(f"| `{module}` | `{MODULE_MAP[module]}` | {', '.join(f'`{n}`' for n in names)} |")
    return "\n".join(rows)


def not_supported_table():
    rows = ["| legacy API | what to write with minifluid |", "| --- | --- |"]
    rows += [f"| `{_short(name)}` | `{replacement}` |" for name, replacement in sorted(REPLACEMENTS.items())]
    rows += ["", "| API family (not supported yet) | names |", "| --- | --- |"]
    for family, modules in NOT_SUPPORTED_YET.items():
        cells = [f"`{_short(module)}`: " + ", ".join(names.split()) for module, names in modules.items()]
        rows.append(f"| {family} | {'; '.join(cells)} |")
    return "\n".join(rows)


TABLES = {"api-table": api_table, "not-supported": not_supported_table}


def render(text):
    for marker, make in TABLES.items():
        begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{make()}\n{end}{tail}"
    return text


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = README.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print("README.md's API tables are stale: run python tools/gen_api_table.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
