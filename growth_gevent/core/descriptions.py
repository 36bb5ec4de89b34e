"""What a country or an indicator is called: its description, beside the records that name it by code.

A country's description is its ``name``; an indicator's its ``name``, ``units`` and ``scale`` (the IMF's
``Billions``). A description changes by a JSON merge patch (RFC 7396), ``{code: {field: text or null} or
null}``: a text sets the field, null removes it, a code set to null loses its description. Codes are stored
upper-case, as in records. The facets serve the descriptions beside their counts (api/facets.py).
"""

from .records import CONTROL_CHARACTERS, InvalidRecord, check_name, has_surrogates

COUNTRY = "country"
INDICATOR = "indicator"
FIELDS = {COUNTRY: ("name",), INDICATOR: ("name", "units", "scale")}
# Bounds: a text's characters, the codes of one patch, the codes described of each kind.
MAX_TEXT = 300
MAX_PATCH_CODES = 10_000
MAX_DESCRIBED = 100_000

Description = dict[str, str]
# code -> field -> text (None: remove it); a code -> None removes its description
Patch = dict[str, dict[str, str | None] | None]


def parse_patch(by: str, document: object) -> Patch:
    """A merge patch of ``by``'s descriptions, checked; InvalidRecord (422) naming the first thing wrong."""
    if type(document) is not dict:
        raise InvalidRecord('body must be a JSON object: {"CODE": {"name": "..."}, ...}')
    if len(document) > MAX_PATCH_CODES:
        raise InvalidRecord(f"a patch holds at most {MAX_PATCH_CODES} codes")
    fields = FIELDS[by]
    patch: Patch = {}
    for code, change in document.items():
        problem = check_name(by.capitalize(), code)
        if problem:
            raise InvalidRecord(f"{code!r}: {problem}")
        if change is None:
            patch[code.upper()] = None
            continue
        if type(change) is not dict:
            raise InvalidRecord(f"{code}: must be an object of {', '.join(fields)}, or null")
        for field, text in change.items():
            if field not in fields:
                raise InvalidRecord(f"{code}: unknown field {field!r} (fields: {', '.join(fields)})")
            if text is not None:
                problem = _check_text(text)
                if problem:
                    raise InvalidRecord(f"{code}: {field} {problem}")
        patch[code.upper()] = {field: text and text.strip() or None for field, text in change.items()}
    return patch


def _check_text(text: object) -> str | None:
    if type(text) is not str:
        return "must be a string or null"
    if len(text) > MAX_TEXT:
        return f"must be at most {MAX_TEXT} characters"
    if has_surrogates(text) or CONTROL_CHARACTERS.search(text):
        return "must be UTF-8 text without control characters"
    return None


def merged(current: Description | None, change: dict[str, str | None] | None) -> Description:
    """``current`` with ``change`` merged in; empty when nothing is left (no description)."""
    if change is None:
        return {}
    result = dict(current or {})
    for field, text in change.items():
        if text is None:
            result.pop(field, None)
        else:
            result[field] = text
    return result


class TooMany(Exception):
    """A patch would describe more than MAX_DESCRIBED codes of one kind; nothing was changed."""

    def __init__(self, by: str) -> None:
        super().__init__(f"at most {MAX_DESCRIBED} {by} codes can be described")


class Descriptions:
    """Descriptions held in memory: by -> code -> description."""

    def __init__(self) -> None:
        self.held: dict[str, dict[str, Description]] = {COUNTRY: {}, INDICATOR: {}}

    def apply(self, by: str, patch: Patch) -> dict[str, Description]:
        """Merge ``patch`` in, all of it or (TooMany) nothing; the descriptions it leaves, {} for those removed."""
        held = self.held[by]
        results = {code: merged(held.get(code), change) for code, change in patch.items()}
        added = sum(1 for code, description in results.items() if description and code not in held)
        if added and len(held) + added > MAX_DESCRIBED:
            raise TooMany(by)
        self.restore(by, results)
        return results

    def restore(self, by: str, descriptions: dict[str, Description]) -> None:
        """Set each code's description, ``{}`` removing it: replay, and the undo of a patch not kept."""
        held = self.held[by]
        for code, description in descriptions.items():
            if description:
                held[code] = dict(description)
            else:
                held.pop(code, None)
