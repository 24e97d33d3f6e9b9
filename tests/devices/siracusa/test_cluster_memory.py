"""The L2 / L3 plan of cluster programs (cluster_memory.place_constants) and an integer graph whose weights go to
L3, bit-exact on the emulated cluster (issue 28, item 1: "keeps tensors in L2, or L3 where the plan puts weights")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.cprogram.program import Constant
from pondlib.devices.siracusa.cluster_memory import place_constants
from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster_report
from pondlib.devices.siracusa.graphsim import GraphSim
from pondlib.errors import CodegenError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5000), min_size=0, max_size=8),
    arena=st.integers(0, 20_000),
    l2=st.integers(1, 40_000),
)
def test_the_largest_constants_move_to_l3_until_the_rest_fits(sizes, arena, l2):
    consts = [Constant(f"c{i}", "int8_t", np.zeros(n)) for i, n in enumerate(sizes)]
    if arena > l2:
        with pytest.raises(CodegenError, match=rf"L2 bytes.*{arena} B of activations.*l2_bytes = {l2}"):
            place_constants(consts, arena, l2, where="test")
        return
    placed, need, l3 = place_constants(consts, arena, l2, where="test")
    assert [c.name for c in placed] == [c.name for c in consts] and all(c.memory == "" for c in consts)  # a copy
    moved = [c for c in placed if c.memory == "L3"]
    kept = [c for c in placed if c.memory == ""]
    assert need == arena + sum(c.nbytes for c in kept) <= l2 and l3 == sum(c.nbytes for c in moved)
    if moved:  # only the largest moved: every kept one is at most the smallest moved one
        assert max((c.nbytes for c in kept), default=0) <= min(c.nbytes for c in moved)
        smallest = min(moved, key=lambda c: (c.nbytes, c.name))
        assert need + smallest.nbytes > l2  # moving one fewer would not fit


def _graph() -> OpGraph:
    rng = np.random.default_rng(5)
    return OpGraph(
        (TensorInfo("x", (4, 48), "int8"),),
        (TensorInfo("y", (4, 8), "int8"),),
        (
            Node("mm1", "MatMul", ("x", "w1"), ("h",)),
            Node("rq1", "RequantShift", ("h", "m", "z"), ("a",), {"div": 512, "n_levels_out": 256, "signed": 1}),
            Node("mm2", "MatMul", ("a", "w2"), ("g",)),
            Node("rq2", "RequantShift", ("g", "m", "z"), ("y",), {"div": 512, "n_levels_out": 256, "signed": 1}),
        ),
        {
            "w1": rng.integers(-128, 128, (48, 96)).astype(np.float32),
            "w2": rng.integers(-128, 128, (96, 8)).astype(np.float32),
            "m": np.float32(5),
            "z": np.float32(0),
        },
    )


@pytest.mark.slow  # two zig builds and two emulated runs
def test_a_graph_whose_weights_go_to_l3_stays_bit_exact(tmp_path):
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    from pondlib.codegen.cluster import build_cluster, run_cluster
    from pondlib.devices.siracusa.graph_codegen import pack_inputs, unpack_outputs

    g = _graph()
    x = np.random.default_rng(1).integers(-128, 128, (4, 48))
    want = GraphSim(g).run({"x": x}, integer=True).outputs["y"]
    _, full = emit_cluster_report(g, cores=2, l1_bytes=64_000)
    assert full.l3_bytes == 0
    prog, rep = emit_cluster_report(g, cores=2, l1_bytes=64_000, l2_bytes=full.l2_need - 1)
    assert rep.l3_bytes == 48 * 96 and rep.l2_need == full.l2_need - 48 * 96  # w1, the largest, moved
    assert "POND_L3" in prog.sources[f"{prog.name}.c"] and any(n.startswith("L3:") for n in prog.notes)
    runs = {}
    for label, p in (("l2", emit_cluster_report(g, cores=2, l1_bytes=64_000)[0]), ("l3", prog)):
        runs[label] = run = run_cluster(build_cluster(p, tmp_path / label, cores=2, cache_dir=tmp_path / "zig"),
                                        pack_inputs(g, [x])[None])  # fmt: skip
        assert np.array_equal(unpack_outputs(g, run.y.reshape(-1))[0], want), label
    assert runs["l2"].dma_l3_bytes == 0 and runs["l3"].dma_l3_bytes == 48 * 96
    assert runs["l3"].cycles > runs["l2"].cycles and runs["l3"].y.tobytes() == runs["l2"].y.tobytes()
    with pytest.raises(CodegenError, match=r"L2 bytes.*l2_bytes = 100"):
        emit_cluster_report(g, cores=2, l2_bytes=100)
