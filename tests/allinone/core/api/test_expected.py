"""`accepted`: the closed set of values a field of a request body's type accepts."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import msgspec
import pytest

from allinone.core.api.errors import from_validation
from allinone.core.api.expected import accepted, listed, misplaced_field, nearest_field


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Say(msgspec.Struct, tag_field="type", tag="say"):
    text: str
    tone: Literal["calm", "loud"] = "calm"


class Wait(msgspec.Struct, tag_field="type", tag="wait"):
    seconds: Annotated[int, msgspec.Meta(ge=0)]
    unit: Annotated[Literal["s", "ms"], msgspec.Meta(description="the unit")] | None = None


class Body(msgspec.Struct):
    steps: list[Say | Wait]
    colour: Colour = Colour.RED
    labels: dict[str, Literal["on", "off"]] = {}
    order: Literal["asc", "desc"] = msgspec.field(default="asc", name="sort_order")


@pytest.mark.parametrize(
    ("param", "values"),
    [
        ("steps[0].type", ["say", "wait"]),
        ("steps[3].tone", ["calm", "loud"]),
        ("steps[0].unit", ["ms", "s", None]),
        ("colour", ["red", "blue"]),
        ("labels.anything", ["off", "on"]),
        ("sort_order", ["asc", "desc"]),
    ],
)
def test_the_values_a_closed_field_accepts(param: str, values: list[Any]) -> None:
    assert accepted(Body, param) == values


@pytest.mark.parametrize(
    "param", ["steps", "steps[0]", "steps[0].text", "steps[0].seconds", "order", "missing", ""]
)
def test_an_open_or_unknown_field_has_no_list(param: str) -> None:
    assert accepted(Body, param) is None


def test_the_refusal_names_the_accepted_values() -> None:
    def refusal(body: dict[str, Any]) -> str:
        with pytest.raises(msgspec.ValidationError) as caught:
            msgspec.convert(body, Body)
        return from_validation(caught.value, Body).message

    assert refusal({"steps": [{"type": "jump"}]}) == (
        "Invalid request: Invalid value 'jump'; steps[0].type must be one of 'say', 'wait'."
    )
    assert refusal({"steps": [{"type": "say", "text": "x", "tone": "shrill"}]}) == (
        "Invalid request: Invalid enum value 'shrill'; steps[0].tone must be one of 'calm', 'loud'."
    )
    assert refusal({"steps": [{"type": "wait", "seconds": -1}]}) == (
        "Invalid request: Expected `int` >= 0."
    )
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"steps": [{"type": "jump"}]}, Body)
    assert from_validation(caught.value).message == "Invalid request: Invalid value 'jump'."


class Ask(msgspec.Struct, tag_field="type", tag="ask"):
    reply: Literal["yes", "no"]


class Pick(msgspec.Struct, tag_field="type", tag="pick"):
    reply: Literal["no", "red", "blue"]
    colour: str = ""


class Answers(msgspec.Struct):
    steps: list[Ask | Pick]


def test_the_body_narrows_a_tagged_union_to_the_member_it_names() -> None:
    picked = {"steps": [{"type": "ask", "reply": "yes"}, {"type": "pick", "reply": "green"}]}
    assert accepted(Answers, "steps[1].reply", picked) == ["blue", "no", "red"]
    assert accepted(Answers, "steps[0].reply", picked) == ["no", "yes"]
    # Without a body, or where it names no member, every member counts, each value once.
    assert accepted(Answers, "steps[1].reply") == ["no", "yes", "blue", "red"]
    unnamed = {"steps": [{"type": "jump"}]}
    assert accepted(Answers, "steps[0].reply", unnamed) == ["no", "yes", "blue", "red"]
    assert accepted(Answers, "steps[5].reply", picked) == ["no", "yes", "blue", "red"]
    assert accepted(Answers, "steps[0].type", unnamed) == ["ask", "pick"]
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert(picked, Answers)
    assert from_validation(caught.value, Answers, picked).message == (
        "Invalid request: Invalid enum value 'green'; steps[1].reply must be one of"
        " 'blue', 'no', 'red'."
    )
    # An unknown field is matched against the named member's fields alone.
    asked = {"steps": [{"type": "ask", "colur": "red"}]}
    assert nearest_field(Answers, "steps[0]", "colur", asked) is None
    assert nearest_field(Answers, "steps[0]", "colur", {"steps": [{"type": "pick"}]}) == "colour"
    assert nearest_field(Answers, "steps[0]", "colur") == "colour"


@pytest.mark.parametrize(
    ("at", "name", "near"),
    [
        ("", "step", "steps"),
        ("", "colur", "colour"),
        ("", "sort_ordr", "sort_order"),  # the name on the wire, not the attribute's
        ("", "order", "sort_order"),
        ("steps[0]", "txt", "text"),  # the members of a tagged union
        ("steps[2]", "second", "seconds"),
        ("", "x", None),
        ("", "tone", None),  # a field of a nested object, not of this one
        ("steps[0]", "seconds", None),  # another member's own field
        ("labels", "on", None),  # a mapping has no fixed fields
        ("missing", "colur", None),
    ],
)
def test_the_known_field_nearest_an_unknown_one(at: str, name: str, near: str | None) -> None:
    assert nearest_field(Body, at, name) == near


class Saved(msgspec.Struct):
    say: Say | None = None
    say_id: str | None = None
    steps: list[Say | Wait] = []
    wait: Wait | None = None


@pytest.mark.parametrize(
    ("at", "name", "near"),
    [
        ("say", "id", "say_id"),  # the field one level up that flattens the two names
        ("", "id", None),  # the body itself has no level up
        ("steps[0]", "id", None),  # an array's item is no field `p` to flatten
        ("wait", "id", None),  # no `wait_id` beside `wait`
        ("say", "txt", "text"),  # a misspelling of a field here comes first
    ],
)
def test_a_field_one_level_up_answers_an_unknown_field_that_flattens_into_it(
    at: str, name: str, near: str | None
) -> None:
    assert nearest_field(Saved, at, name) == near


class Inner(msgspec.Struct):
    saved: Saved


def test_the_field_one_level_up_is_named_by_its_whole_path() -> None:
    assert nearest_field(Inner, "saved.say", "id") == "saved.say_id"
    assert nearest_field(list[Saved], "[1].say", "id") == "[1].say_id"


@pytest.mark.parametrize(
    ("at", "name", "beside"),
    [
        ("say", "steps", "say"),  # a field of the object around `say`, not of `say`
        ("wait", "say_id", "wait"),
        ("say", "text", None),  # a field here: not misplaced
        ("say", "colour", None),  # a field of no level
        ("", "steps", None),  # the body itself has no level up
        ("steps[0]", "wait", None),  # an array's item is no object's field
    ],
)
def test_a_field_put_one_level_too_deep_is_placed_beside_its_parent(
    at: str, name: str, beside: str | None
) -> None:
    assert misplaced_field(Saved, at, name) == beside


class Note(msgspec.Struct, forbid_unknown_fields=True):
    text: str


class Notes(msgspec.Struct, forbid_unknown_fields=True):
    notes: list[Note]
    first: Note | None = None


def test_the_refusal_of_an_unknown_field_offers_the_nearest_known_one() -> None:
    def refusal(body: dict[str, Any]) -> tuple[str, str | None]:
        with pytest.raises(msgspec.ValidationError) as caught:
            msgspec.convert(body, Notes)
        error = from_validation(caught.value, Notes)
        return error.message, error.param

    assert refusal({"notes": [{"text": "hi", "txt": "hi"}]}) == (
        "Invalid request: Object contains unknown field `txt`; did you mean `text`?",
        "notes[0].txt",
    )
    assert refusal({"note": []}) == (
        "Invalid request: Object contains unknown field `note`; did you mean `notes`?",
        "note",
    )
    assert refusal({"notes": [], "first": {"text": "hi", "notes": []}}) == (
        "Invalid request: Object contains unknown field `notes`;"
        " `notes` belongs one level up, beside `first`.",
        "first.notes",
    )
    assert refusal({"notes": [], "colour": "red"}) == (
        "Invalid request: Object contains unknown field `colour`.",
        "colour",
    )


def test_listing() -> None:
    assert listed(["user"]) == "'user'"
    assert listed(["a", None, 2]) == "one of 'a', null, 2"
    assert listed(list("abcd"), limit=2) == "one of 'a', 'b', ..."


def test_a_type_is_described_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Describing a large body's type takes milliseconds; a refused request reuses it."""
    described: list[Any] = []
    real = msgspec.inspect.type_info

    def counted(type_: Any) -> Any:
        described.append(type_)
        return real(type_)

    class Fresh(msgspec.Struct):
        mode: Literal["a", "b"]

    monkeypatch.setattr(msgspec.inspect, "type_info", counted)
    assert accepted(Fresh, "mode") == ["a", "b"]
    assert accepted(Fresh, "mode") == ["a", "b"]
    assert described == [Fresh]
