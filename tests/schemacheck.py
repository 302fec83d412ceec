"""A small JSON Schema checker for the subset guardscan's schema files use
(``type``, ``const``, ``enum``, ``required``, ``properties``,
``additionalProperties``, ``items``, ``pattern``, ``minimum``, local ``$ref``),
so the suite needs no ``jsonschema``. ``strict=True`` also reports keys an
object's schema does not list: the schema must name every key guardscan
writes, though consumers may meet keys it does not (docs/json.md, Stability).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["errors"]

_TYPES: dict[str, Any] = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/"), ref
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return dict(node)


def errors(value: Any, schema: dict[str, Any], *, strict: bool = False) -> list[str]:
    """Every place ``value`` breaks ``schema``, as ``$.path: what`` lines."""
    out: list[str] = []
    _check(value, schema, schema, "$", strict, out)
    return out


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], where: str, strict: bool,
           out: list[str]) -> None:
    if "$ref" in schema:
        _check(value, _resolve(root, schema["$ref"]), root, where, strict, out)
        return
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            out.append(f"{where}: {type(value).__name__} is not {'/'.join(kinds)}")
            return
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"],
                                                                          value):
        out.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if _is(value, "number") and "minimum" in schema and value < schema["minimum"]:
        out.append(f"{where}: {value} is below {schema['minimum']}")
    if isinstance(value, list) and "items" in schema:
        for number, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{number}]", strict, out)
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                out.append(f"{where}: missing {key!r}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], root, f"{where}.{key}", strict, out)
            elif extra is False or (strict and extra is True):
                out.append(f"{where}: key {key!r} is not in the schema")
            elif isinstance(extra, dict):
                _check(item, extra, root, f"{where}.{key}", strict, out)
