"""The envelope tool protocol: tool calls as one fenced JSON block in the model's text.

For models without native tool calling (small local models, OpenAI-compatible servers without
tool support). ``EnvelopeProvider`` wraps any provider; ``protocol_for`` picks the protocol for
a provider kind; ``envelope_schema`` builds the JSON schema a constrained decoder can follow;
``parse_reply`` and ``FenceSplitter`` read replies whole or as they stream.
"""

from __future__ import annotations

from openheim.envelope.fence import FENCE_TAG, TAGS, FenceSplitter, split_text
from openheim.envelope.parse import ParsedReply, parse_reply
from openheim.envelope.provider import EnvelopeProvider, envelope_request, protocol_for
from openheim.envelope.schema import envelope_schema

__all__ = [
    "FENCE_TAG",
    "TAGS",
    "EnvelopeProvider",
    "FenceSplitter",
    "ParsedReply",
    "envelope_request",
    "envelope_schema",
    "parse_reply",
    "protocol_for",
    "split_text",
]
