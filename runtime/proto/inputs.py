"""The ordered `MessageInput` shared by initial, prepared and active inputs."""

from __future__ import annotations

from typing import Annotated

import msgspec

from runtime.proto.errors import ValidationError

# Whitespace a text part must contain more than (Go unicode space plus ECMAScript).
BLANK_CHARACTERS = frozenset(
    "\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class InputText(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="input_text", tag_field="type"
):
    text: str


class InputImage(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="input_image", tag_field="type"
):
    image_url: Annotated[str, msgspec.Meta(min_length=1)]


InputContent = InputText | InputImage


class Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: list[InputContent]


MessageInput = list[Message]


def encoded_size(messages: MessageInput) -> int:
    """The bytes `messages` take in the frame that carries them (compact JSON), the
    measure `limits.MAX_INPUT_BYTES` bounds."""
    return len(msgspec.json.encode(messages))


def is_blank(text: str) -> bool:
    return all(ch in BLANK_CHARACTERS for ch in text)


def validate_message_input(messages: MessageInput) -> None:
    """Check the shape rules: at least one message, each with an image or non-blank text."""
    if not messages:
        raise ValidationError("invalid_input", "input needs at least one message")
    for message in messages:
        if not any(
            isinstance(part, InputImage)
            or (isinstance(part, InputText) and not is_blank(part.text))
            for part in message.content
        ):
            raise ValidationError("invalid_input", "each message needs text or an image")


def text_of(messages: MessageInput) -> str:
    """Join the text parts of all messages with a newline, preserving order."""
    return "\n".join(
        part.text for message in messages for part in message.content if isinstance(part, InputText)
    )
