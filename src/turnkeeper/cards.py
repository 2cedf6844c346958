"""Cards: what a tool returns for the reader to see as it is, not retold by the model.

    @tool
    def order(order_id: str) -> Card:
        return Card(
            f"Order {order_id}",
            {"Status": "shipped", "Total": "€42.00"},
            columns=["Item", "Qty"],
            rows=[["teapot", 1], ["kettle", 2]],
            links=[("Track it", "https://carrier.example/track/A-1001")],
        )

The model reads the card as its tool result (`to_json()`, as JSON text); the turn's
published state carries it as a bubble of its own after the tool that made it, and the
widget draws it (title, label and value pairs, the table, the links that are `https:`),
always as text, never as HTML. `turnkeeper run` prints it as plain text (`as_text()`).

A value or a cell is text, a number (kept as text, as Python writes it) or `None` (kept
as nothing). A card that cannot be drawn (no title, a row longer than its columns, a
value that is a list) is a `CardError` when it is made, in the tool that made it: the
turn answers that tool with an error result and reports it, as it does any exception a
tool raises; the model reads why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_TEXT = 4000
"""The most characters in one title, label, value, cell, link text or address."""
MAX_FIELDS = 50
MAX_COLUMNS = 20
MAX_ROWS = 200
MAX_LINKS = 20


class CardError(ValueError):
    """A card that cannot be drawn: the message says which part and why."""


@dataclass(frozen=True, slots=True, init=False)
class Card:
    """A titled card: label and value pairs, a small table, links; every value text."""

    title: str
    fields: tuple[tuple[str, str], ...]
    """`(label, value)` pairs, in the order given."""
    columns: tuple[str, ...]
    """The table's column headings (none: a table without headings)."""
    rows: tuple[tuple[str, ...], ...]
    links: tuple[tuple[str, str], ...]
    """`(text, url)` pairs; the widget shows only the `https:` ones."""

    def __init__(
        self,
        title: str,
        fields: Mapping[str, object] | Iterable[tuple[str, object]] | None = None,
        *,
        rows: Iterable[Sequence[object]] = (),
        columns: Iterable[str] = (),
        links: Iterable[tuple[str, str]] = (),
    ) -> None:
        pairs = fields.items() if isinstance(fields, Mapping) else (fields or ())
        headings = _listed(columns, "columns", MAX_COLUMNS)
        set_ = object.__setattr__
        set_(self, "title", _label(title, "title"))
        set_(self, "fields", _fields(pairs))
        set_(self, "columns", tuple(_label(c, f"columns[{i}]") for i, c in enumerate(headings)))
        set_(self, "rows", _rows(rows, len(headings)))
        set_(self, "links", _links(links))

    def to_json(self) -> dict[str, Any]:
        """The card's JSON: what the model reads and the published bubble's `card`."""
        return {
            "title": self.title,
            "fields": [{"label": label, "value": value} for label, value in self.fields],
            "columns": list(self.columns),
            "rows": [list(row) for row in self.rows],
            "links": [{"text": text, "url": url} for text, url in self.links],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Card:
        """The card `to_json()` wrote (a stored bubble's); `CardError` if it is not one."""
        try:
            return cls(
                data["title"],
                [(f["label"], f["value"]) for f in data.get("fields") or ()],
                columns=data.get("columns") or (),
                rows=data.get("rows") or (),
                links=[(link["text"], link["url"]) for link in data.get("links") or ()],
            )
        except (KeyError, TypeError) as e:
            raise CardError(f"not a card's JSON: {e!r}") from None

    def as_text(self) -> str:
        """The card as plain text: its title, `label: value` lines, the table's rows
        tab-separated (headings first), then each link as `text <url>`."""
        lines = [self.title]
        lines += [f"{label}: {value}" for label, value in self.fields]
        lines += ["\t".join(row) for row in ((self.columns,) if self.columns else ()) + self.rows]
        lines += [f"{text} <{url}>" for text, url in self.links]
        return "\n".join(lines)


def _text(value: object, where: str) -> str:
    """A value as the card keeps it: text as it is, a number as Python writes it."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        kind = type(value).__name__
        raise CardError(f"card {where}: must be text or a number, not {kind}")
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_TEXT:
        raise CardError(f"card {where}: longer than {MAX_TEXT} characters")
    return text


def _label(value: object, where: str) -> str:
    """Text that must say something: a title, a label, a heading, a link's text or address."""
    if not isinstance(value, str):
        raise CardError(f"card {where}: must be text, not {type(value).__name__}")
    if not value.strip():
        raise CardError(f"card {where}: is empty")
    return _text(value, where)


def _listed(values: object, what: str, most: int) -> list[Any]:
    """The parts of a card that come as a list, at most `most` of them; a string or a
    mapping where a list belongs is a mistake, said."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise CardError(f"card {what}: must be a list, not {type(values).__name__}")
    listed = list(values)
    if len(listed) > most:
        raise CardError(f"card {what}: {len(listed)} of them, at most {most}")
    return listed


def _fields(pairs: Iterable[Any]) -> tuple[tuple[str, str], ...]:
    fields = []
    for i, pair in enumerate(_listed(pairs, "fields", MAX_FIELDS)):
        label, value = _pair(pair, f"fields[{i}]", "(label, value)")
        fields.append((_label(label, f"fields[{i}] label"), _text(value, f"field {label!r}")))
    return tuple(fields)


def _rows(rows: Iterable[Sequence[object]], width: int) -> tuple[tuple[str, ...], ...]:
    """The table's rows, each as wide as the headings (or, without headings, the first row)."""
    kept: list[tuple[str, ...]] = []
    for i, row in enumerate(_listed(rows, "rows", MAX_ROWS)):
        cells = _listed(row, f"rows[{i}]", MAX_COLUMNS)
        width = width or len(cells)
        if len(cells) != width:
            raise CardError(f"card rows[{i}]: {len(cells)} cells, the table has {width} columns")
        kept.append(tuple(_text(cell, f"rows[{i}][{j}]") for j, cell in enumerate(cells)))
    return tuple(kept)


def _links(links: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    kept = []
    for i, link in enumerate(_listed(links, "links", MAX_LINKS)):
        text, url = _pair(link, f"links[{i}]", "(text, url)")
        kept.append((_label(text, f"links[{i}] text"), _label(url, f"links[{i}] url").strip()))
    return tuple(kept)


def _pair(pair: object, where: str, shape: str) -> tuple[object, object]:
    if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise CardError(f"card {where}: must be a pair {shape}, not {pair!r:.60}")
    return pair[0], pair[1]
