"""Session input as the Runtime receives it, and the bound on its size.

A stored input message is `{"role": "user", "content": [parts]}`; on the wire it is a
`runtime.proto.inputs.Message` (`wire_messages`). The frame that carries it is bounded
(`limits.MAX_FRAME_BYTES`), so its size is measured as it is encoded there
(`inputs.encoded_size`) and bounded at admission by `limits.MAX_INPUT_BYTES`: one
request's input, and the input a turn holds and has not yet taken (its initial input
and the messages waiting to steer it, which start the next turn when it never takes
them). Anything past it is refused before it is stored.
"""

from __future__ import annotations

from typing import Any

from allinone.core.errors import InvalidRequest
from runtime.proto import limits
from runtime.proto.inputs import InputContent, InputImage, InputText, Message, encoded_size

INPUT_TOO_LARGE = "input_too_large"


def content_parts(parts: list[dict[str, Any]]) -> list[InputContent]:
    return [
        InputText(text=p["text"])
        if p["type"] == "input_text"
        else InputImage(image_url=p["image_url"])
        for p in parts
    ]


def wire_messages(messages: list[dict[str, Any]]) -> list[Message]:
    """Stored input messages as the Runtime receives them."""
    return [Message(content=content_parts(m["content"])) for m in messages]


def wire_size(messages: list[dict[str, Any]]) -> int:
    """The bytes stored input `messages` take in the frame that carries them."""
    return encoded_size(wire_messages(messages))


def check_input_size(messages: list[dict[str, Any]], param: str) -> int:
    """The wire size of `messages`; refused naming `param` past `MAX_INPUT_BYTES`."""
    size = wire_size(messages)
    if size > limits.MAX_INPUT_BYTES:
        raise InvalidRequest(
            f"The input is {size} bytes as the Runtime receives it (its messages as"
            f" JSON); an input may be at most {limits.MAX_INPUT_BYTES} bytes (512 KiB).",
            param,
            code=INPUT_TOO_LARGE,
        )
    return size


def check_waiting_size(waiting: int, size: int, param: str) -> None:
    """Refuse, naming `param`, an input of `size` bytes that would take the input its
    turn holds and has not yet taken (`waiting` bytes) past `MAX_INPUT_BYTES`."""
    if waiting + size > limits.MAX_INPUT_BYTES:
        raise InvalidRequest(
            f"The session's turn already holds {waiting} bytes of input it has not yet"
            f" taken; with this input ({size} bytes) it would pass the"
            f" {limits.MAX_INPUT_BYTES} bytes (512 KiB) one turn takes at once. Send it"
            " once the turn has taken its input, or send less.",
            param,
            code=INPUT_TOO_LARGE,
        )
