"""Tables and lines that fit the terminal without breaking a number, a date or a name.

Rich squeezes a table that is too wide by folding cells, which cuts ``82,861`` or
``ttl_expired_5m`` in two. Here a table is planned against the width first: a column may
offer narrower renderings (``12.4M`` for ``12,387,553``), columns of lesser use are left
out, and only a column of words wraps, between words. A line of text wraps between its
``·``-separated parts.

Every header, cell and line is passed through ``cachediag.text.sanitize`` here, whoever
built it: a table or a line that shows a log's text (a model, a session id, a path)
cannot print its control or reordering characters, even where its caller forgot. Nor
is such text read as rich markup: ``[link=https://...]`` in a model name would make the
terminal show a hyperlink to anywhere (rich writes OSC 8 for it, past any sanitiser).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cachediag.text import sanitize

SEPARATOR = 3
"""Cells in a table without edges are 3 apart: a space, the rule, a space."""

Cell = str | Text


@dataclass(slots=True)
class Column:
    """One column of a fitted table; its header and cells are sanitised as it is made."""

    header: str
    variants: Sequence[Sequence[Cell]]
    """The cells of every row, widest rendering first; each list as long as the rows."""
    justify: str = "left"
    keep: int = 100
    """Columns with the lowest ``keep`` go first when the table does not fit."""
    wraps: bool = False
    """A column of words that may wrap between words (never inside one)."""
    atoms: Sequence[str] = ()
    """Phrases of a wrapping column that must stay on one line (``expected
    (compaction)`` is one cause in two words): the column is never narrower."""
    short_header: str | None = None
    before_wrapping: bool = True
    """Take a narrower rendering rather than wrap a column of words; ``False`` keeps the
    full figures until nothing else makes the table fit."""
    chosen: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        # Widths are planned on the text that will be shown, so sanitised first.
        self.header = sanitize(self.header)
        if self.short_header is not None:
            self.short_header = sanitize(self.short_header)
        self.variants = [[safe_cell(c) for c in cells] for cells in self.variants]
        self.atoms = [sanitize(a) for a in self.atoms]

    def cells(self) -> Sequence[Cell]:
        return self.variants[self.chosen]

    def width(self) -> int:
        header = self.short_header if self.chosen and self.short_header else self.header
        return max([_len(header), *(_len(c) for c in self.cells())])

    def min_width(self) -> int:
        """The longest word: a wrapping column never gets narrower than that."""
        if not self.wraps:
            return self.width()
        words = [w for c in self.cells() for w in _plain(c).split()]
        return max([len(self.header), *(len(w) for w in (*words, *self.atoms))])


def safe_cell(cell: Cell) -> Cell:
    """``cell`` with ``sanitize``'s replacements: one ``?`` a character, so a styled
    ``Text`` keeps its spans where they were."""
    if isinstance(cell, str):
        return sanitize(cell)
    plain = cell.plain
    if plain.isascii() and plain.isprintable():
        return cell
    safe = cell.copy()
    safe.plain = sanitize(plain)
    return safe


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _len(cell: Cell) -> int:
    return Text(cell).cell_len if isinstance(cell, str) else cell.cell_len


def _total(columns: Sequence[Column], *, shrunk: bool = False) -> int:
    widths = [c.min_width() if shrunk else c.width() for c in columns]
    return sum(widths) + SEPARATOR * max(0, len(columns) - 1)


def plan_columns(columns: list[Column], width: int) -> list[Column]:
    """The columns to show at ``width``, each at the rendering it will use."""
    shown = list(columns)
    # Narrower renderings first, so that words need not wrap; then leave columns out.
    while _total(shown) > width:
        narrower = [c for c in shown if c.before_wrapping and c.chosen + 1 < len(c.variants)]
        if not narrower:
            break
        min(narrower, key=lambda c: c.keep).chosen += 1
    while _total(shown, shrunk=True) > width:
        narrower = [c for c in shown if c.chosen + 1 < len(c.variants)]
        if narrower:
            min(narrower, key=lambda c: c.keep).chosen += 1
            continue
        droppable = [c for c in shown if c.keep < 100]
        if not droppable:
            break
        shown.remove(min(droppable, key=lambda c: c.keep))
    return shown


def fitted_table(
    columns: list[Column],
    width: int,
    *,
    title: str | None = None,
    row_styles: Sequence[str | None] | None = None,
) -> Table:
    shown = plan_columns(columns, width)
    # Text as it is, never markup (rich reads a str cell, header or title as markup).
    title = None if title is None else _literal(sanitize(title))
    table = Table(title=title, show_edge=False, pad_edge=False, expand=False)
    for c in shown:
        header = _literal(c.short_header if c.chosen and c.short_header else c.header)
        if c.wraps:
            table.add_column(header, justify=c.justify, min_width=c.min_width())  # type: ignore[arg-type]
        else:
            table.add_column(header, justify=c.justify, no_wrap=True)  # type: ignore[arg-type]
    rows = len(columns[0].variants[0]) if columns else 0
    for i in range(rows):
        style = row_styles[i] if row_styles else None
        table.add_row(*(_not_markup(c.cells()[i]) for c in shown), style=style)
    return table


def _not_markup(cell: Cell) -> Cell:
    return _literal(cell) if isinstance(cell, str) else cell


def _literal(text: str) -> str:
    """``text`` as markup that rich renders as ``text`` itself."""
    if "[" not in text:
        return text
    escaped = escape(text)
    # escape() doubles a last backslash, for markup written after it; a cell has none.
    return escaped[:-1] if text.endswith("\\") and not text.endswith("\\\\") else escaped


def compact_count(n: int) -> str:
    """``12.4M``, ``99.7k``, ``812``: a token count in five characters or so."""
    for size, unit in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(n)


def wrap_parts(
    parts: Sequence[str],
    width: int,
    *,
    indent: str = "",
    sep: str = " · ",
    follow: str | None = None,
) -> list[str]:
    """Join ``parts`` with ``sep`` into lines of at most ``width`` cells. A line that
    breaks between parts ends with the separator's mark (`` ·``); the next starts with
    ``follow`` (default: ``indent`` plus two spaces). A part too long for a line of its
    own breaks between words, and only a word longer than a line (a path) is cut, after
    a ``/`` where it has one."""
    lines: list[str] = []
    tail = sep.rstrip()
    follow = indent + "  " if follow is None else follow
    line, fresh = indent, True
    for i, part in enumerate(parts):
        # Room for the mark that ends the line if the next part goes on the next one.
        reserve = len(tail) if i < len(parts) - 1 else 0
        if len(line) + len(part if fresh else sep + part) + reserve <= width:
            line += part if fresh else sep + part
            fresh = False
            continue
        if not fresh:
            lines.append(line + tail)
            line, fresh = follow, True
            if len(line) + len(part) + reserve <= width:
                line, fresh = line + part, False
                continue
        for word in part.split(" "):
            if not fresh and len(line) + 1 + len(word) + reserve <= width:
                line += " " + word
                continue
            if not fresh:
                lines.append(line)
                line = follow
            room = max(1, width - len(line) - reserve)
            while len(word) > room:
                cut = _cut_at(word, room)
                lines.append(line + word[:cut])
                line, word = follow, word[cut:]
                room = max(1, width - len(line) - reserve)
            line += word
            fresh = False
    lines.append(line)
    return lines


def _cut_at(word: str, room: int) -> int:
    """Where a word too long for its line is cut: after the last ``/`` that fits, so a
    path breaks between folder names, never inside one; a word with none is cut at
    ``room``."""
    slash = word.rfind("/", 0, room)
    return slash + 1 if slash > 0 else room


def text_lines(
    parts: Sequence[str], width: int, *, indent: str = "", style: str = ""
) -> RenderableType:
    """``wrap_parts`` as one rich ``Text`` (printed with ``soft_wrap``: it already fits),
    each part sanitised first (a newline inside a part is a ``?``, not a line end)."""
    safe = [sanitize(p) for p in parts]
    return Text("\n".join(wrap_parts(safe, width, indent=sanitize(indent))), style=style)


def short_path(name: str, width: int) -> str:
    """A path (or folder name) cut to ``width`` from the left, at a ``/`` where one
    leaves something to show: its end tells projects apart (``…/work/app``)."""
    if len(name) <= width:
        return name
    tail = name[len(name) - width + 1 :]
    cut = tail.find("/")
    return "…" + (tail[cut:] if 0 <= cut < len(tail) - 1 else tail)


def path_variants(names: Sequence[str]) -> list[list[str]]:
    """A column of paths at full length, then shortened (``short_path``) to fit."""
    return [list(names), *([short_path(n, w) for n in names] for w in (60, 48, 40, 32, 24, 16))]


def short_id(name: str, width: int = 14) -> str:
    """A stream or agent id cut to ``width`` (the start tells them apart)."""
    return name if len(name) <= width else name[: width - 1] + "…"
