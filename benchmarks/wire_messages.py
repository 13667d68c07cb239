"""What the wire's Python costs per message: a decoder layer's request (30 arrays) and a model's weights.

    python benchmarks/wire_messages.py            # 15 rounds
    python benchmarks/wire_messages.py --rounds 30

An isolated certify run sends about 1,550 requests and as many answers, 16,000 arrays in all
(``conformance/boundary/isolation/wire.py``); each costs Python on both sides: encoding (the tree, its JSON), reading
the sizes from the header, and decoding (an array per buffer). Here both ends are in this process, joined by a
pipe, so the figures are the wire's own work, without the other process's wake-ups. The median over the rounds
is printed for each step; the last line is the figure: ``wire: <us> us a decoder-layer request, sent and
received``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from conformance.boundary.isolation import wire


def decoder_layer_request(d_model: int = 32, d_ff: int = 64) -> dict:
    """The request ``ProxyAdapter.call`` sends for a decoder layer of the checks' size (30 arrays)."""
    rng = np.random.default_rng(0)

    def matrix(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    weights = {}
    for block in ("self_attn.", "cross_attn."):
        for name in ("q", "k", "v", "o"):
            weights[f"{block}w_{name}"], weights[f"{block}b_{name}"] = matrix(d_model, d_model), matrix(d_model)
    for norm in ("ln1", "ln2", "ln3"):
        weights[f"{norm}.gamma"], weights[f"{norm}.beta"] = matrix(d_model), matrix(d_model)
    weights.update({"ffn.w1": matrix(d_model, d_ff), "ffn.b1": matrix(d_ff), "ffn.w2": matrix(d_ff, d_model),
                    "ffn.b2": matrix(d_model)})
    args = [matrix(2, 7, d_model), matrix(2, 9, d_model), weights, 4, 1e-6, np.ones((2, 7, 7), bool),
            np.ones((2, 1, 9), bool)]
    return {"target": 0, "part": "decoder_layer", "args": args, "kwargs": {}, "seed": None, "release": []}


def weights_request(arrays: int = 85) -> dict:
    """``load_weights`` for a small model: 85 arrays, the largest of the checks' weight dicts."""
    rng = np.random.default_rng(1)
    weights = {f"layer{i // 10}.p{i % 10}": rng.standard_normal((8, 4)).astype(np.float32) for i in range(arrays)}
    return {"target": 1, "part": "load_weights", "args": [weights], "kwargs": {}, "seed": None, "release": []}


def per_message_us(step, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        step()
    return (time.perf_counter() - started) / repeat * 1e6


def measure(request: dict, channel: wire.Channel, repeat: int) -> dict[str, float]:
    header, _ = wire.encode(request)
    tree = json.loads(header)
    blank = [bytearray(size) for size in wire.buffer_sizes(tree)]
    return {
        "encode": per_message_us(lambda: wire.encode(request), repeat),
        "sizes": per_message_us(lambda: wire.buffer_sizes(wire.parse_header(header)), repeat),
        "decode": per_message_us(lambda: wire.decode(tree, blank), repeat),
        "sent and received": per_message_us(lambda: (channel.send(request), channel.receive()), repeat),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=1000, help="messages timed in each round")
    args = parser.parse_args(argv)
    read, write = os.pipe()
    channel = wire.Channel(read, write)
    figures: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for name, request in (("decoder layer, 30 arrays", decoder_layer_request()),
                              ("load_weights, 85 arrays", weights_request())):
            for step, us in measure(request, channel, args.repeat).items():
                figures.setdefault(name, {}).setdefault(step, []).append(us)
    channel.close()
    for name, steps in figures.items():
        print(f"{name}: " + ", ".join(f"{step} {statistics.median(us):.1f} us" for step, us in steps.items()))
    layer = statistics.median(figures["decoder layer, 30 arrays"]["sent and received"])
    print(f"wire: {layer:.1f} us a decoder-layer request, sent and received")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
