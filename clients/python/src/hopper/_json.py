"""Payloads travel as strings of JSON text; the SDK's API takes and returns plain values."""

from __future__ import annotations

import json
from typing import Any

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_json(v: Any) -> str:
    """encode_json is v as JSON text; None is "" (the field left unset)."""
    return "" if v is None else _encoder.encode(v)


def decode_json(s: str) -> Any:
    """decode_json is the value of JSON text s; "" (an unset field) is None."""
    return None if s == "" else json.loads(s)
