"""The pieces the access control is made of: signed values, CSRF comparison, name checks."""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from hypothesis import given
from hypothesis import strategies as st

from clusterloom.web import params
from clusterloom.web.security import Signer, same_token

payloads = st.dictionaries(
    st.text(min_size=1, max_size=8), st.text(max_size=20) | st.integers(), max_size=4
)


@given(payloads, st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=255))
def test_any_change_to_a_signed_value_is_refused(
    payload: dict[str, object], at: int, x: int
) -> None:
    signer = Signer(b"k" * 32)
    value = signer.sign("session", dict(payload), 60)
    got = signer.unsign("session", value)
    assert got is not None and {k: got[k] for k in payload if k != "exp"} == {
        k: v for k, v in payload.items() if k != "exp"
    }
    i = at % len(value)
    changed = value[:i] + chr((ord(value[i]) + 1 + x % 60) % 128 or 65) + value[i + 1 :]
    if changed != value:
        assert signer.unsign("session", changed) is None
    assert signer.unsign("login", value) is None  # signed for another purpose
    assert Signer(b"j" * 32).unsign("session", value) is None  # another key


def test_an_expired_value_is_refused() -> None:
    signer = Signer()
    assert signer.unsign("session", signer.sign("session", {"a": 1}, -1)) is None
    assert signer.unsign("session", None) is None
    assert signer.unsign("session", "no-dot") is None


def test_csrf_tokens_compare_exactly_and_never_empty() -> None:
    assert same_token("abc", "abc")
    assert not same_token("abc", "abd")
    assert not same_token("", "")
    assert not same_token("abc", "")


@given(st.text(max_size=40))
def test_a_name_with_a_dot_dot_slash_or_nul_is_never_accepted(text: str) -> None:
    for bad in (f"{text}..", f"../{text}", f"{text}/x", f"{text}\x00", f"\\{text}"):
        with pytest.raises(HTTPException):
            params.name(bad, "rack")


@given(st.text(max_size=20), st.lists(st.text(max_size=10), max_size=5))
def test_one_of_accepts_exactly_the_listed_names(text: str, names: list[str]) -> None:
    if text in names and "\x00" not in text:
        assert params.one_of(text, names, "table") == text
    else:
        with pytest.raises(HTTPException):
            params.one_of(text, names, "table")


@given(st.text(max_size=30))
def test_an_id_is_lowercase_hex(text: str) -> None:
    ok = 6 <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)
    if ok:
        assert params.hex_id(text, "design") == text
    else:
        with pytest.raises(HTTPException):
            params.hex_id(text, "design")
