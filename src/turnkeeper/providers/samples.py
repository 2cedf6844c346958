"""Sample values for JSON schemas: the input the dev model gives each tool (`dev.py`).

`sample_input(schema)` is an object that a tool's `input_schema` accepts, when one can be
found without search: the schema's own `const`, `examples` or `default`; else the first
`enum` value; else a value of its `type` within its bounds: a plausible string (a date, an
address, an email where `format` says so) of a length in range, a number in range (a
multiple of `multipleOf`), `False`, one item of an array (or `minItems`), an object of its
required properties only (the tool's defaults stand for the rest). `$ref`s to `$defs`
(or `definitions`) are followed, `anyOf`/`oneOf` take their first branch that is not
`null`, `allOf` is read as one schema.

A schema that nothing satisfies (a `minLength` over its `maxLength`, a `pattern` no
plain word matches, a `$ref` it does not hold) still gives a value: the best one found.
The tool then rejects it, and the model reads that error as it reads any tool's.
Pure functions, no I/O.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 12
"""How deep a sample nests at most (a schema that refers to itself stops here)."""

WORD = "example"
"""The plausible string, where a schema says nothing more of its text."""

FORMATS = {
    "date": "2026-01-15",
    "date-time": "2026-01-15T09:30:00Z",
    "time": "09:30:00",
    "email": "ada@example.com",
    "idn-email": "ada@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "duration": "PT1H",
}
"""Strings of the formats JSON Schema names, each valid for its format."""

CANDIDATES = (WORD, "example-1", "Example", "1", "a", "A-1", "example.txt")
"""The strings tried, in order, against a `pattern`."""

Schema = Mapping[str, Any]


def sample_input(schema: Any) -> dict[str, Any]:
    """An object for a tool's `input_schema`: its required properties, each sampled (a copy:
    nothing of the schema's own examples is shared with the input)."""
    value = sample(schema, schema)
    return copy.deepcopy(value) if isinstance(value, dict) else {}


def sample(schema: Any, root: Any, depth: int = 0) -> Any:
    """A value `schema` accepts (or the nearest one to it), its `$ref`s read in `root`."""
    if schema is True or schema == {}:
        return WORD
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return None
    if "$ref" in schema:
        return sample(_referred(schema, root), root, depth + 1)
    given = _given(schema)
    if given is not None:
        return given[0]
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return sample(_first_not_null(schema[key]), root, depth + 1)
    if isinstance(schema.get("allOf"), list):
        return sample(_merged(schema), root, depth + 1)
    return _typed(schema, _type_of(schema), root, depth)


def _given(schema: Schema) -> tuple[Any] | None:
    """The schema's own value for a sample, in a tuple (the value may be None), if it has one."""
    if "const" in schema:
        return (schema["const"],)
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return (examples[0],)
    if "example" in schema:  # OpenAPI's spelling
        return (schema["example"],)
    if "default" in schema:
        return (schema["default"],)
    return None


def _typed(schema: Schema, kind: str, root: Any, depth: int) -> Any:
    if kind == "object":
        return _object(schema, root, depth)
    if kind == "array":
        return _array(schema, root, depth)
    if kind == "integer":
        return _integer(schema)
    if kind == "number":
        return _number(schema)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema)


def _type_of(schema: Schema) -> str:
    """The schema's type: its `type` (the first that is not `null`), or what its keywords say."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        return "number"
    return "string"


def _object(schema: Schema, root: Any, depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    extra = schema.get("additionalProperties", True)
    return {
        str(name): sample(properties.get(name, extra), root, depth + 1)
        for name in required
        if isinstance(name, str)
    }


def _array(schema: Schema, root: Any, depth: int) -> list[Any]:
    first = schema.get("prefixItems")
    items: list[Any] = []
    if isinstance(first, list):
        items = [sample(s, root, depth + 1) for s in first]
    least = _whole(schema.get("minItems"), 1 if not items else len(items))
    most = _whole(schema.get("maxItems"), least)
    wanted = min(max(least, len(items)), most) if most >= least else least
    each = schema.get("items", True)
    while len(items) < wanted:
        items.append(sample(each, root, depth + 1))
    return items[:wanted]


def _integer(schema: Schema) -> int:
    low, high = _bounds(schema, whole=True)
    lowest = None if low is None else math.ceil(low)
    highest = None if high is None else math.floor(high)
    given = _finite(schema.get("multipleOf"))
    step = int(given) if given is not None and given >= 1 and given.is_integer() else 1
    if lowest is not None:
        return -(-lowest // step) * step
    if highest is not None and highest < step:
        return highest // step * step
    return step


def _number(schema: Schema) -> int | float:
    low, high = _bounds(schema)
    if low is not None and high is not None:
        value: float = (low + high) / 2
    elif low is not None:
        value = low + 1
    elif high is not None:
        value = min(high - 1, 1)
    else:
        value = 1
    step = _finite(schema.get("multipleOf"))
    if step is not None and step > 0:
        value = math.ceil(value / step) * step
        if high is not None and value > high:
            value = math.floor(high / step) * step
    return int(value) if float(value).is_integer() else value


def _bounds(schema: Schema, whole: bool = False) -> tuple[float | None, float | None]:
    """The tightest bounds the schema gives a number; for a `whole` number, an exclusive
    bound is moved to the next whole number inside. (A number strictly between two bounds,
    or one past a single bound, is inside an exclusive one too.)"""
    lows = [_finite(schema.get("minimum")), _finite(schema.get("exclusiveMinimum"))]
    highs = [_finite(schema.get("maximum")), _finite(schema.get("exclusiveMaximum"))]
    if whole and lows[1] is not None:
        lows[1] = math.floor(lows[1]) + 1
    if whole and highs[1] is not None:
        highs[1] = math.ceil(highs[1]) - 1
    low = max((v for v in lows if v is not None), default=None)
    high = min((v for v in highs if v is not None), default=None)
    return low, high


def _string(schema: Schema) -> str:
    text = FORMATS.get(str(schema.get("format")), WORD)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        text = next((c for c in (text, *CANDIDATES) if _matches(pattern, c)), text)
    least = _whole(schema.get("minLength"), 0)
    most = _whole(schema.get("maxLength"), max(least, len(text)))
    if len(text) < least:
        text = (text + "-" + WORD * least)[:least]
    return text[:most] if most >= least else text


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:  # a pattern of another dialect: no candidate is known to match
        return False


def _referred(schema: Schema, root: Any) -> Any:
    """What `schema`'s local `$ref` (`#/$defs/Name`) points to in `root`; None if nothing."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    found: Any = root
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _first_not_null(branches: list[Any]) -> Any:
    return next(
        (b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")),
        branches[0],
    )


def _merged(schema: Schema) -> dict[str, Any]:
    """`allOf`'s schemas and the rest of `schema` as one (properties and required joined)."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _whole(value: Any, otherwise: int) -> int:
    number = _finite(value)
    return int(number) if number is not None and number >= 0 else otherwise


def _finite(value: Any) -> float | None:
    """`value` if it is a finite JSON number (never a boolean), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
