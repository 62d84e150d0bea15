"""Preset dictionaries for the journal's stored patches (`storage.journal`).

A patch is small JSON that mostly repeats the same keys and shapes from event to event,
so it is stored deflated against a preset dictionary of those shapes: a few dozen bytes
instead of a few hundred. A stored row names its dictionary by the first byte of its
payload, so these values are part of the file format: never edit one; add a new number
and make it `CURRENT`. Pure.
"""

from __future__ import annotations

import functools
import zlib

# Typical patches of echo, message and turn events, identifiers and numbers left out,
# the most frequent last (deflate reaches nearer matches with fewer bits).
_V1 = (
    '{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"completed_at":[0],"x_corebox"'
    ':{"c":{"worker_epoch":[0],"checkpoint":{"c":{"journal_seq":[0]}}}}}}}}{"c":{"turn_id'
    '":["turn_"],"turn":{"c":{"id":["turn_"],"created_at":[0],"started_at":[0],"x_corebox'
    '":{"c":{"worker_epoch":[0],"checkpoint":{"c":{"journal_seq":[0]}}}}}}}}{"c":{"turn_i'
    'd":["turn_"],"turn":{"c":{"id":["turn_"],"created_at":[0],"x_corebox":{"c":{"worker_'
    'epoch":[0]}}}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"started_at":['
    '0],"completed_at":[0],"x_corebox":{"c":{"worker_epoch":[0],"checkpoint":{"c":{"journ'
    'al_seq":[0],"created_at":[0]}}}}}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["tu'
    'rn_"],"created_at":[0],"x_corebox":{"c":{"worker_epoch":[0],"checkpoint":{"c":{"jour'
    'nal_seq":[0]}}}}}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"created_a'
    't":[0],"started_at":[0],"completed_at":[0],"x_corebox":{"c":{"worker_epoch":[0],"che'
    'ckpoint":{"c":{"journal_seq":[0],"created_at":[0]}}}}}}}}{"c":{"turn_id":["turn_"],"'
    'turn":{"c":{"id":["turn_"],"started_at":[0],"x_corebox":{"c":{"worker_epoch":[0]}}}}'
    '}}{"c":{"session":{"c":{"last_active_at":[0],"status":["idle"],"usage":[{"input_toke'
    'ns":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_de'
    'tails":{"reasoning_tokens":0},"total_tokens":0}]}}}}{"c":{"session":{"c":{"id":["ses'
    's_"],"agent":{"c":{"id":["agent_"]}},"created_at":[0],"last_active_at":[0],"status":'
    '["in_progress"],"x_corebox":{"c":{"confinement":[{"kind":"landlock","abi":0}],"forke'
    'd_from":[null],"hidden_turn_ids":[[]],"agent_version":[null],"config_revision":[0],"'
    'overlays":[[]]}}}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"started_a'
    't":[null],"completed_at":[null],"status":["queued"],"usage":[null],"x_corebox":{"c":'
    '{"phase":[null],"state_version":[0],"worker_epoch":[0],"context":[null],"checkpoint"'
    ':[null],"config_digest":[null],"manifest":[null]}}}}},"r":["usage"]}{"c":{"turn_id":'
    '["turn_"],"turn":{"c":{"id":["turn_"],"completed_at":[0],"x_corebox":{"c":{"worker_e'
    'poch":[0],"checkpoint":{"c":{"journal_seq":[0],"created_at":[0]}}}}}}}}{"c":{"sessio'
    'n":{"c":{"last_active_at":[0],"usage":{"c":{"input_tokens":[0],"output_tokens":[0],"'
    'total_tokens":[0]}}}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"create'
    'd_at":[0]}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"created_at":[0],'
    '"started_at":[0],"x_corebox":{"c":{"worker_epoch":[0]}}}}}}{"c":{"session":{"c":{"la'
    'st_active_at":[0]}}}}{"c":{"session_id":["sess_"],"turn_id":["turn_"],"turn":{"c":{"'
    'id":["turn_"],"agent_id":["agent_"],"session_id":["sess_"],"created_at":[0],"started'
    '_at":[0],"status":["in_progress"],"x_corebox":{"c":{"phase":["running"],"state_versi'
    'on":[0],"worker_epoch":[0],"context":[{"rebuilt":false,"items_included":null,"items_'
    'omitted":null,"turns_hidden":0}],"checkpoint":[null],"agent_version":[null],"config_'
    'digest":["sha256:"],"manifest":[{"config_digest":"sha256:","agent_version":null,"har'
    'ness":"scripted","model":"scripted","protocol":"scripted","system_prompt_digest":"sh'
    'a256:","tools_digest":null,"tool_catalog_version":null,"policy":{"tool_policy":null,'
    '"overlays":[]},"request_ids":[],"stop_reason":null,"history_omitted":null}]}}}}}}{"c'
    '":{"session":{"c":{"id":["sess_"],"agent":{"c":{"id":["agent_"]}},"created_at":[0],"'
    'last_active_at":[0],"x_corebox":{"c":{"confinement":[{"kind":"landlock","abi":0}],"f'
    'orked_from":[null],"hidden_turn_ids":[[]],"agent_version":[null],"config_revision":['
    '0],"overlays":[[]]}}}}}}{"c":{"turn_id":["turn_"],"item_id":["msg_"],"part":{"c":{"t'
    'ext":[""]}}}}{"c":{"session":{"c":{"status":["in_progress"],"usage":[null]}}}}{"c":{'
    '"session":{"c":{"status":["in_progress"]}}}}{"c":{"session":{"c":{"status":["idle"],'
    '"usage":[{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens'
    '":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}]}}}}{"c":{"sess'
    'ion_id":["sess_"],"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"agent_id":["agent'
    '_"],"session_id":["sess_"],"created_at":[0],"started_at":[0],"completed_at":[0],"sta'
    'tus":["completed"],"usage":[{"input_tokens":0,"input_tokens_details":{"cached_tokens'
    '":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens"'
    ':0}],"x_corebox":{"c":{"phase":["settled"],"state_version":[0],"worker_epoch":[0],"c'
    'ontext":[{"rebuilt":false,"items_included":null,"items_omitted":null,"turns_hidden":'
    '0}],"checkpoint":[{"boundary":"between_model_calls","journal_seq":0,"config_digest":'
    '"sha256:","created_at":0}],"agent_version":[null],"config_digest":["sha256:"],"manif'
    'est":[{"config_digest":"sha256:","agent_version":null,"harness":"scripted","model":"'
    'scripted","protocol":"scripted","system_prompt_digest":"sha256:","tools_digest":null'
    ',"tool_catalog_version":null,"policy":{"tool_policy":null,"overlays":[]},"request_id'
    's":[],"stop_reason":null,"history_omitted":null}]}}}},"usage":[{"input_tokens":0,"in'
    'put_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"'
    'reasoning_tokens":0},"total_tokens":0}]}}{"c":{"turn":{"c":{"started_at":[0],"status'
    '":["in_progress"],"x_corebox":{"c":{"phase":["running"],"state_version":[0],"worker_'
    'epoch":[0],"context":[{"rebuilt":false,"items_included":null,"items_omitted":null,"t'
    'urns_hidden":0}],"config_digest":["sha256:"],"manifest":[{"config_digest":"sha256:",'
    '"agent_version":null,"harness":"scripted","model":"scripted","protocol":"scripted","'
    'system_prompt_digest":"sha256:","tools_digest":null,"tool_catalog_version":null,"pol'
    'icy":{"tool_policy":null,"overlays":[]},"request_ids":[],"stop_reason":null,"history'
    '_omitted":null}]}}}}}}{"c":{"turn":{"c":{"completed_at":[0],"status":["completed"],"'
    'usage":[{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens"'
    ':0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}],"x_corebox":{"c'
    '":{"phase":["settled"],"state_version":[0],"checkpoint":[{"boundary":"between_model_'
    'calls","journal_seq":0,"config_digest":"sha256:","created_at":0}]}}}},"usage":[{"inp'
    'ut_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_to'
    'kens_details":{"reasoning_tokens":0},"total_tokens":0}]}}{"c":{"session":{"c":{"id":'
    '["sess_"],"agent":{"c":{"id":["agent_"]}},"created_at":[0],"last_active_at":[0],"usa'
    'ge":[{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,'
    '"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}],"x_corebox":{"c":{'
    '"confinement":[{"kind":"landlock","abi":0}],"forked_from":[null],"hidden_turn_ids":['
    '[]],"agent_version":[null],"config_revision":[0],"overlays":[[]]}}}}}}{"c":{"session'
    '_id":["sess_"],"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"agent_id":["agent_"]'
    ',"session_id":["sess_"],"created_at":[0],"x_corebox":{"c":{"context":[null],"checkpo'
    'int":[null],"agent_version":[null],"config_digest":[null],"manifest":[null]}}}}}}{"c'
    '":{"item":[{"role":"assistant","content":[{"type":"output_text","text":"hi"}],"phase'
    '":"final_answer","id":"msg_","type":"message","turn_id":"turn_","status":"completed"'
    '}],"output_index":[0]},"r":["turn"]}{"c":{"turn_id":["turn_"],"item":{"c":{"role":["'
    'user"],"content":[[{"type":"input_text","text":"hi"}]],"phase":[null],"id":["msg_"],'
    '"turn_id":["turn_"]}},"output_index":[null]}}{"c":{"item_id":["msg_"],"content_index'
    '":[0],"part":[{"type":"output_text","text":""}]},"k":["session_id","turn_id","item_i'
    'd","output_index","content_index","part"]}{"c":{"item_id":["msg_"],"output_index":[0'
    '],"content_index":[0],"part":[{"type":"output_text","text":""}]},"r":["turn"]}{"c":{'
    '"session_id":["sess_"],"turn_id":["turn_"],"item":{"c":{"id":["msg_"],"turn_id":["tu'
    'rn_"]}}}}{"c":{"item_id":["msg_"],"output_index":[0],"content_index":[0],"text":["hi'
    '"]},"r":["turn"]}{"c":{"item_id":["msg_"],"output_index":[0],"content_index":[0],"pa'
    'rt":[{"type":"output_text","text":"hi"}]},"r":["turn"]}{"c":{"item_id":["msg_"],"out'
    'put_index":[0],"content_index":[0],"delta":["hi"]},"r":["turn"]}{"c":{"text":["hi"]}'
    ',"r":["delta"]}{"c":{"part":[{"type":"output_text","text":"hi"}]},"r":["text"]}{"c":'
    '{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"x_corebox":{"c":{"worker_epoch":[0'
    '],"checkpoint":{"c":{"journal_seq":[0]}}}}}}}}{"c":{"delta":["hi"]},"r":["part"]}{"c'
    '":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"],"x_corebox":{"c":{"worker_epoch":'
    '[0]}}}}}}{"c":{"session":{"c":{"usage":{"c":{"input_tokens":[0],"output_tokens":[0],'
    '"total_tokens":[0]}}}}}}{"c":{"turn_id":["turn_"],"turn":{"c":{"id":["turn_"]}}}}{"c'
    '":{"item":[{"role":"user","content":[{"type":"input_text","text":"hi"}],"phase":null'
    ',"id":"msg_","type":"message","turn_id":"turn_","status":"completed"}],"output_index'
    '":[null]},"r":["turn"]}{"c":{"item":{"c":{"role":["assistant"],"content":[[]],"phase'
    '":["final_answer"],"id":["msg_"],"status":["in_progress"]}},"output_index":[0]}}{"c"'
    ':{"item":{"c":{"content":[[{"type":"output_text","text":"hi"}]],"status":["completed'
    '"]}}}}{"c":{"turn_id":["turn_"],"item_id":["msg_"]}}'
)

DICTIONARIES: dict[int, bytes] = {1: "".join(_V1).encode()}
CURRENT = 1
_WINDOW_BITS = -15  # raw deflate: no zlib header or checksum
_LEVEL = 9


# Short patches recur (an event equal to its base is `{}`; a stream's deltas repeat
# theirs): their stored forms are kept, a bounded number of short texts.
_REMEMBERED_TEXT = 512
_REMEMBERED = 256
# Deflate never writes fewer than 2 bytes, so with the dictionary's number a packed
# form is at least this long: a text no longer is stored as itself.
_SHORTEST_PACKED = 3


def pack(text: str) -> str | bytes:
    """The stored form of a patch: deflated against the current dictionary, or the text
    itself when that is not smaller."""
    if len(text) <= _SHORTEST_PACKED and text.isascii():
        return text
    if len(text) <= _REMEMBERED_TEXT:
        return _pack_short(text)
    return _pack(text)


def _pack(text: str) -> str | bytes:
    raw = text.encode()
    compressor = _primed(CURRENT).copy()
    packed = bytes((CURRENT,)) + compressor.compress(raw) + compressor.flush()
    return packed if len(packed) < len(raw) else text


_pack_short = functools.lru_cache(maxsize=_REMEMBERED)(_pack)


@functools.cache
def _primed(number: int) -> zlib._Compress:
    """A compressor that has read dictionary `number` and nothing else. Copying it is
    about half the work of a new one (loading a dictionary hashes all of it) and
    gives the same output, byte for byte."""
    return zlib.compressobj(_LEVEL, zlib.DEFLATED, _WINDOW_BITS, zdict=DICTIONARIES[number])


def unpack(stored: str | bytes) -> str:
    """The patch's text from its stored form (text is stored as itself). PostgreSQL
    keeps the column as text, where the bytes arrive as bytea's hex text (`\\x` and hex
    digits); a patch's own text is JSON, which never starts with a backslash."""
    if isinstance(stored, str):
        if not stored.startswith("\\x"):
            return stored
        stored = bytes.fromhex(stored[2:])
    decompressor = zlib.decompressobj(_WINDOW_BITS, zdict=DICTIONARIES[stored[0]])
    return (decompressor.decompress(stored[1:]) + decompressor.flush()).decode()
