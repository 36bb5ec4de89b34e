"""Strict JSON for request bodies: a UTF-8 body read as one JSON document, refusing what JSON readers
disagree on (a key given twice in an object) and numbers no field takes (one too small for a double, an
integer longer than Python reads), each with a 400 or 422 saying why."""

import json
import re
import sys
from typing import Any

import falcon

from ..core.records import Number, underflows

# Quoted in a message: enough to recognise, never the body.
_QUOTED_CHARS = 40
_FLOAT_MAX = sys.float_info.max


class _DuplicateKey(ValueError):
    """An object names a key twice: JSON readers disagree on which value counts (RFC 8259 §4), so no
    guess is made (I-JSON, RFC 7493, forbids it)."""


class _Underflow(ValueError):
    """A number that is not zero but too small in size for a double: it would be read as 0."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return document


def _float(literal: str) -> float:
    value = float(literal)
    if underflows(literal, value):
        raise _Underflow(literal)
    return value


# The standard library's C decoder is strict where ujson is not (`01`, `1.`, `-`, raw control
# characters in strings) and as fast on bulk bodies; it shares repeated keys, so a parse takes less
# memory. Like ujson it reads NaN and Infinity, which the record checks refuse as values (422).
# Hooks cost a call per object or float in Python (docs/performance.md#the-standard-librarys-json-decoder),
# so each decoder has only those it needs: keys are checked only where a cheap count cannot vouch for them,
# floats only in a body with a negative exponent, the one way to write a number that underflows.
_DECODERS = {(unique, tiny): json.JSONDecoder(object_pairs_hook=_unique_keys if unique else None,
                                              parse_float=_float if tiny else None).decode
             for unique in (False, True) for tiny in (False, True)}


def parse_json(body: bytes | bytearray, unique_keys: bool) -> object:
    """The document a UTF-8 JSON body holds, or a 400 saying why it is not one (a key given twice in an
    object too, with ``unique_keys``), or a 422 for numbers no field takes: one too small for a double,
    not zero but read as 0, and an integer longer than Python reads."""
    text = utf8_text(body)
    try:
        return _DECODERS[unique_keys, "e-" in text or "E-" in text](text)
    except _DuplicateKey as error:
        raise falcon.HTTPBadRequest(description=f"request body is not valid JSON for this service: an object "
                                                f"has the key {_quoted(error.args[0])} twice") from None
    except _Underflow as error:
        raise falcon.HTTPUnprocessableEntity(
            description=f"request body has the number {error.args[0][:_QUOTED_CHARS]}, too small for a double: "
                        f"it would be read as 0; send 0, or a number of at least 5e-324 in size") from None
    except json.JSONDecodeError as error:
        if not text.strip():
            raise falcon.HTTPBadRequest(description="request body is empty") from None
        raise falcon.HTTPBadRequest(description=f"request body is not valid JSON: {error}") from None
    except ValueError:  # the decoder's one other refusal: int() of more digits than Python reads
        raise falcon.HTTPUnprocessableEntity(
            description=f"request body has an integer of more than {sys.get_int_max_str_digits()} digits; "
                        f"no field takes one") from None
    except RecursionError:
        raise falcon.HTTPBadRequest(description="request body is not valid JSON: nested too deeply") from None


# The body nearly every PUT sends, {"value": n} (or "Value"), in JSON's grammar: JSON's four whitespace bytes, and a
# number short enough that Python reads it as the decoder does (no integer near the digit limit, no exponent that
# could overflow unseen).
_VALUE_ONLY = re.compile(rb'[ \t\n\r]*\{[ \t\n\r]*"[vV]alue"[ \t\n\r]*:[ \t\n\r]*'
                         rb'(-?(?:0|[1-9][0-9]{0,17})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?)[ \t\n\r]*\}[ \t\n\r]*')


def value_only(body: bytes | bytearray) -> Number | None:
    """The number of a body that is one object of one field, ``value`` or ``Value``, read as :func:`parse_json`
    reads it (an int without a fraction or exponent, else a float), in one match and no document; None for any
    other body, and for a number no field takes (not finite, or too small for a double), which the full parse
    judges and names."""
    match = _VALUE_ONLY.fullmatch(body)
    if match is None:
        return None
    literal, fraction, exponent = match.groups()
    if exponent is None:  # at most 18 digits and 20 decimals: finite, and 0 only where written so
        return int(literal) if fraction is None else float(literal)
    value = float(literal)
    if not -_FLOAT_MAX <= value <= _FLOAT_MAX or (not value and underflows(literal.decode(), value)):
        return None
    return value


def _quoted(key: str) -> str:
    quoted = json.dumps(key, ensure_ascii=False)
    return quoted if len(quoted) <= _QUOTED_CHARS else quoted[:_QUOTED_CHARS] + '..."'


def utf8_text(body: bytes | bytearray) -> str:
    """``body`` decoded from UTF-8, or a 400 naming the first byte that is not."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise falcon.HTTPBadRequest(description=f"request body is not UTF-8: {error.reason} at byte "
                                                f"{error.start}") from None
