"""Validate a tool call's arguments against the tool's JSON Schema, naming the bad field."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match

from tools.base import BaseTool

_validators: dict[int, tuple[dict[str, Any], Draft202012Validator]] = {}


def _validator(tool: BaseTool) -> Draft202012Validator:
    # cached per schema object; the schema is kept in the entry so its id cannot be reused
    key = id(tool.parameters)
    hit = _validators.get(key)
    if hit is not None and hit[0] is tool.parameters:
        return hit[1]
    Draft202012Validator.check_schema(tool.parameters)
    validator = Draft202012Validator(tool.parameters)
    _validators[key] = (tool.parameters, validator)
    return validator


def _field(err: ValidationError) -> str:
    path = ".".join(str(p) for p in err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = [r for r in err.validator_value if r not in err.instance]
        if missing:
            return f"{path}.{missing[0]}" if path else str(missing[0])
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in allowed]
        if extra:
            return f"{path}.{extra[0]}" if path else str(extra[0])
    return path or "(arguments)"


def validate_arguments(tool: BaseTool, arguments: dict[str, Any]) -> str | None:
    """None when the arguments fit the schema, else a reason naming the offending field."""
    try:
        validator = _validator(tool)
    except SchemaError as err:
        return f"tool {tool.name} has an invalid parameter schema: {err.message}"
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    name = _field(error)
    if error.validator == "required":
        return f"missing required argument '{name}'"
    if error.validator == "additionalProperties":
        return f"unexpected argument '{name}'"
    return f"invalid argument '{name}': {error.message}"
