"""Sample input from JSON schemas (providers/samples.py): what the dev model gives each tool.

Every sample of a satisfiable schema is checked with a real JSON Schema validator; an
unsatisfiable one still gives a value (the best found), which the validator rejects.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import jsonschema  # type: ignore[import-untyped]
import pydantic
import pytest

from turnkeeper import ToolContext
from turnkeeper.providers.samples import WORD, sample, sample_input
from turnkeeper.tools.functions import function_tool


def valid(schema: dict[str, Any], value: Any) -> bool:
    return bool(jsonschema.Draft202012Validator(schema).is_valid(value))


def obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or list(properties)}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "examples": ["A-1002", "A-1001"]}, "A-1002"),
        ({"type": "string", "example": "OpenAPI's"}, "OpenAPI's"),
        ({"type": "integer", "default": 7, "minimum": 1}, 7),
        ({"type": "string", "enum": ["small", "large"]}, "small"),
        ({"enum": [3, "three"]}, 3),
        ({"const": "fixed"}, "fixed"),
        ({"type": "string"}, WORD),
        ({"type": "string", "format": "date"}, "2026-01-15"),
        ({"type": "string", "format": "email"}, "ada@example.com"),
        ({"type": "string", "minLength": 12}, "example-exam"),
        ({"type": "string", "maxLength": 3}, "exa"),
        ({"type": "string", "pattern": "^[A-Z]-[0-9]+$"}, "A-1"),
        ({"type": "integer"}, 1),
        ({"type": "integer", "minimum": 5, "maximum": 9}, 5),
        ({"type": "integer", "exclusiveMinimum": 5}, 6),
        ({"type": "integer", "maximum": -3}, -3),
        ({"type": "integer", "minimum": 10, "multipleOf": 4}, 12),
        ({"type": "number", "minimum": 0.5, "maximum": 1.5}, 1),
        ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5}, 0.25),
        ({"type": "number", "exclusiveMaximum": -10}, -11),
        ({"type": "boolean"}, False),
        ({"type": "null"}, None),
        ({"type": ["null", "integer"], "minimum": 2}, 2),
        ({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 4}]}, 4),
        ({"oneOf": [{"type": "string", "enum": ["x"]}, {"type": "integer"}]}, "x"),
        ({"type": "array", "items": {"type": "integer", "minimum": 3}}, [3]),
        ({"type": "array", "items": {"type": "string"}, "minItems": 2}, [WORD, WORD]),
        ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}]}, [1, False]),
    ],
)
def test_a_value_is_the_schemas_own_or_the_first_in_its_bounds(
    schema: dict[str, Any], expected: Any
) -> None:
    value = sample(schema, schema)
    assert value == expected
    assert type(value) is type(expected)
    assert valid(schema, value)


def test_an_object_gets_its_required_properties_only_nested_all_the_way_down() -> None:
    address = obj({"city": {"type": "string"}, "zip": {"type": "string", "pattern": r"^\d+$"}})
    schema = obj(
        {
            "name": {"type": "string", "minLength": 1},
            "address": address,
            "tags": {"type": "array", "items": obj({"label": {"enum": ["gift", "rush"]}})},
            "note": {"type": "string"},
            "count": {"type": "integer", "minimum": 2},
        },
        required=["name", "address", "tags"],
    )
    value = sample_input(schema)
    assert value == {
        "name": WORD,
        "address": {"city": WORD, "zip": "1"},
        "tags": [{"label": "gift"}],
    }
    assert valid(schema, value)


def test_refs_all_of_and_a_schema_that_refers_to_itself() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Item": obj(
                {"sku": {"type": "string", "examples": ["SKU-1"]}, "qty": {"$ref": "#/$defs/Qty"}}
            ),
            "Qty": {"type": "integer", "minimum": 1, "maximum": 9},
            "Node": obj({"child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}),
        },
        "properties": {
            "item": {"$ref": "#/$defs/Item"},
            "both": {"allOf": [obj({"a": {"type": "integer"}}), obj({"b": {"type": "boolean"}})]},
        },
        "required": ["item", "both"],
    }
    value = sample_input(schema)
    assert value == {"item": {"sku": "SKU-1", "qty": 1}, "both": {"a": 1, "b": False}}
    assert valid(schema, value)
    looping = {**schema, "properties": {"node": {"$ref": "#/$defs/Node"}}, "required": ["node"]}
    deep = sample_input(looping)  # ends, however the schema loops
    assert isinstance(deep["node"], dict)


def test_a_function_tools_own_schema_from_type_hints() -> None:
    def book(
        ctx: ToolContext,
        order_id: Annotated[str, pydantic.Field(examples=["A-1002"])],
        size: Literal["S", "M", "L"],
        quantity: Annotated[int, pydantic.Field(ge=2, le=5)],
        gift: bool,
        notes: list[str],
        when: str | None = None,
    ) -> str:
        """Book an order."""
        return ""

    schema = function_tool(book).spec.input_schema
    value = sample_input(schema)
    assert value == {
        "order_id": "A-1002",
        "size": "S",
        "quantity": 2,
        "gift": False,
        "notes": [WORD],
    }
    assert valid(schema, value)


@pytest.mark.parametrize(
    "schema",
    [
        obj({"code": {"type": "string", "minLength": 5, "maxLength": 2}}),
        obj({"code": {"type": "string", "pattern": "^[0-9]{6}$"}}),
        obj({"n": {"type": "integer", "minimum": 5, "maximum": 3}}),
        obj({"n": {"not": {"type": "string"}}}),
        {"type": "object", "properties": {}, "required": ["x"], "additionalProperties": False},
    ],
)
def test_an_unsatisfiable_schema_still_gives_an_object_the_tool_can_reject(
    schema: dict[str, Any],
) -> None:
    value = sample_input(schema)
    assert isinstance(value, dict)
    assert list(value) == schema["required"]
    assert not valid(schema, value)


def test_a_ref_to_nothing_gives_nothing_rather_than_an_error() -> None:
    assert sample_input(obj({"n": {"$ref": "#/$defs/Missing"}})) == {"n": None}
    assert sample_input(obj({"n": {"$ref": "https://example.com/s.json"}})) == {"n": None}


@pytest.mark.parametrize("schema", [None, "a string", {"type": "string"}, [], True])
def test_a_tool_input_is_always_an_object(schema: Any) -> None:
    assert sample_input(schema) == {}
