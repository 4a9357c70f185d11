"""Reading recordings back for the tests with the ``mcap`` package's own reader (not hebictl's)."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests._support.extras import extra_missing

# a test module importing these helpers is skipped, not broken, without the record extra
pytest.importorskip("mcap", reason=extra_missing("mcap"))
pytest.importorskip("mcap_protobuf", reason=extra_missing("mcap_protobuf"))

from mcap.decoder import DecoderFactory as McapDecoderFactory
from mcap.reader import make_reader
from mcap.records import Chunk, Message, Schema
from mcap.stream_reader import StreamReader, breakup_chunk
from mcap_protobuf.decoder import DecoderFactory


class JsonDecoderFactory(McapDecoderFactory):
    """JSON-encoded channels (hebictl's own schemas) as dicts."""

    def decoder_for(self, message_encoding: str, schema: Schema | None) -> Any:
        return json.loads if message_encoding == "json" else None


class Readback:
    """Every channel, decoded message and attachment of a finished recording, read through its index."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as f:
            reader = make_reader(f, decoder_factories=[DecoderFactory(), JsonDecoderFactory()])
            summary = reader.get_summary()
            assert summary is not None, f"{path}: no summary section (not closed?)"
            self.declared = {ch.topic for ch in summary.channels.values()}
            self.schema = {ch.topic: summary.schemas[ch.schema_id].name for ch in summary.channels.values()}
            self.messages: dict[str, list[tuple[int, Any]]] = defaultdict(list)
            for _schema, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
                self.messages[channel.topic].append((message.log_time, decoded))
            self.attachments = {a.name: a.data for a in reader.iter_attachments()}
            self.metadata = {m.name: m.metadata for m in reader.iter_metadata()}

    def times(self, topic: str) -> list[int]:
        return [t for t, _ in self.messages[topic]]

    def check_topics(self, *, one_per_cycle: bool = True) -> None:
        """Every declared topic has messages, and each topic's timestamps never go back (those of
        ``/joint_states``, one per control cycle, strictly increase)."""
        empty = sorted(t for t in self.declared if not self.messages[t])
        assert not empty, f"declared topics without messages: {empty}"
        for topic in self.declared:
            t = self.times(topic)
            assert all(b >= a for a, b in pairwise(t)), f"{topic}: timestamps go back"
        t = self.times("/joint_states")
        assert not one_per_cycle or all(b > a for a, b in pairwise(t)), "two cycles with one timestamp"


def chunk_ends(blob: bytes) -> list[tuple[int, int]]:
    """(end offset, messages) of each chunk of a complete MCAP file, from its summary (the writer's
    chunk index), read with the ``mcap`` package: what a cut at each offset must still hold."""
    with io.BytesIO(blob) as f:
        summary = make_reader(f).get_summary()
        assert summary is not None
        out = []
        for ci in summary.chunk_indexes:
            f.seek(ci.chunk_start_offset)
            chunk = next(StreamReader(f, skip_magic=True, emit_chunks=True).records)
            assert isinstance(chunk, Chunk)
            out.append((ci.chunk_start_offset + ci.chunk_length,
                        sum(isinstance(r, Message) for r in breakup_chunk(chunk))))
    return out
