#!/usr/bin/env python3
"""Write the seed of the fuzz_set target: a valid benchmark set
(docs/benchmark-sets.md) holding the golden model_graph, conv_results and
train_trace messages of tests/data/golden.

    tests/fuzz/make_set_seed.py   # writes tests/fuzz/corpus_set/golden.tcset
"""
import hashlib
import json
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
golden = os.path.join(here, "..", "data", "golden")
envs = [open(os.path.join(golden, n), "rb").read()
        for n in ("model_graph.bin", "conv_results.bin", "train_trace.bin")]


def record(kind, payload):
    t = bytes([ord(kind)])
    return struct.pack("<I", len(payload)) + t + payload + hashlib.sha256(t + payload).digest()[:8]


header = json.dumps({
    "format": "traincast-benchmark-set", "format_version": 1,
    "set_id": "01JB8ZQ6W7R3N0V6Y3D1D5MZ0K", "source": "fuzz-seed",
    "traincast_version": "0.1.0", "schema_version": 7, "protocol_version": 1,
    "exported_at": "2026-12-01T00:00:00Z", "records": len(envs),
    "devices": [{"name": "golden", "uuid": "u", "kind": "cpu", "conv_results": 1, "traces": 1}],
    "models": ["m"]}, indent=1).encode()
body = b"\x89TCSET\r\n" + record("H", header) + b"".join(record("E", e) for e in envs)
trailer = json.dumps({"records": len(envs), "sha256": hashlib.sha256(body).hexdigest()}).encode()
os.makedirs(os.path.join(here, "corpus_set"), exist_ok=True)
with open(os.path.join(here, "corpus_set", "golden.tcset"), "wb") as f:
    f.write(body + record("T", trailer))
