"""The per-tile profile of a tiled cluster program (issue 28, item 4): one marker per (op, tile), the planned DMA."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("unicorn")
pytest.importorskip("ziglang")

from pondlib.codegen.cluster import build_cluster, run_cluster  # noqa: E402
from pondlib.devices.siracusa.graph_codegen import pack_inputs, unpack_outputs  # noqa: E402
from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster_report  # noqa: E402
from pondlib.devices.siracusa.graphsim import GraphSim  # noqa: E402
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo  # noqa: E402


def _graph() -> OpGraph:
    return OpGraph(
        (TensorInfo("x", (8, 2), "int8"),),
        (TensorInfo("y", (8, 2), "int8"),),
        (
            Node("a", "Add", ("x", "b"), ("h",)),
            Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 4, "n_levels_out": 256, "signed": 1}),
        ),
        {"b": np.float32([1, 2]), "m": np.float32(3), "z": np.float32(0)},
    )


@pytest.mark.slow  # a zig build (about 5-20 s cold)
def test_profile_one_entry_per_tile_with_planned_dma(tmp_path):
    g = _graph()
    prog, rep = emit_cluster_report(g, name="tiny", cores=2, l1_bytes=64, double_buffer=False)
    assert sum(r.n_tiles for r in rep.rows) > len(rep.rows)  # the tiny L1 tiles at least one op
    x = np.arange(-8, 8).reshape(8, 2)
    run = run_cluster(build_cluster(prog, tmp_path, cores=2, cache_dir=tmp_path / "zig"), pack_inputs(g, [x])[None])
    want = GraphSim(g).run({"x": x}, integer=True).outputs["y"]
    assert np.array_equal(unpack_outputs(g, run.y.reshape(-1))[0], want)
    tiles = {r.index * 65536 + t for r in rep.rows for t in range(r.n_tiles)}
    assert set(run.profile) == tiles | {len(rep.rows) * 65536}  # and the copy of the graph outputs at the end
    # a marker's span holds its tile's output DMA and the next tile's input DMA: move DMA-in one marker later
    marks = sorted(run.profile)
    din = [run.dma_in_bytes - sum(e.dma_in_bytes for e in run.profile.values())]
    din += [run.profile[m].dma_in_bytes for m in marks[:-1]]
    for r in rep.rows:
        moved = sum(d + run.profile[m].dma_out_bytes for m, d in zip(marks, din) if m // 65536 == r.index)
        assert moved == r.dma_bytes, r
    assert all(e.calls == 1 and len(e.instructions) == 2 for e in run.profile.values())
    assert sum(e.slowest for e in run.profile.values()) <= run.span
