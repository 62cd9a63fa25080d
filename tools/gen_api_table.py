"""Generate README.md's table of supported fluid APIs from the code (minifluid.compat.supported_api).

Usage:  python tools/gen_api_table.py          # rewrite the table in README.md
        python tools/gen_api_table.py --check  # exit 1 if README.md's table is stale
"""
import pathlib
import sys

from minifluid.compat import MODULE_MAP, supported_api

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BEGIN, END = "<!-- api-table:begin -->", "<!-- api-table:end -->"


def table():
    rows = ["| legacy module | minifluid module | names |", "| --- | --- | --- |"]
    for module, names in supported_api().items():
        rows.append(f"| `{module}` | `{MODULE_MAP[module]}` | {', '.join(f'`{n}`' for n in names)} |")
    return "\n".join(rows)


def render(text):
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = README.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print("README.md's API table is stale: run python tools/gen_api_table.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
