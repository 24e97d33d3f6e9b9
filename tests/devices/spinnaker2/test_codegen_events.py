"""spinnaker2 SNN C, event-driven synapse rows: equal to SpiNNaker2Sim bit for bit on silent and dense inputs.

Per tick the C gathers the source neurons with a non-zero count once per source (input, each population:
recurrent, backward and skip projections too) and reads only their rows, found through ``syn_first``. Random
configurations of ``test_codegen`` (every neuron model, delays, several PEs per population) run on inputs with
all-zero ticks, ticks where every input channel has events, and sparse ticks; every output, record and state is
compared exactly. The tables are checked for their narrow types and sizes.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pondlib.codegen import compile_host, run_host
from pondlib.devices.spinnaker2.codegen import emit, record_names
from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim
from tests.devices.spinnaker2.test_codegen import _bits, random_config

pytestmark = pytest.mark.skipif(
    not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler on PATH"
)


def _raster(rng: np.random.Generator, n_in: int, T: int = 30) -> np.ndarray:
    """(2, T, N_in): silent ticks, full-density ticks (every channel, counts 1..3), sparse ticks."""
    x = rng.integers(1, 4, (2, T, n_in)) * (rng.random((2, T, n_in)) < 0.15)
    x[:, 5:10] = 0
    x[:, 10:14] = rng.integers(1, 4, (2, 4, n_in))
    return x


def test_random_configs_silent_and_dense_ticks(tmp_path):
    spikes = recurrent = 0
    for seed in range(12):
        config = random_config(300 + seed)
        rng = np.random.default_rng(seed)
        x = _raster(rng, config.n_input)
        prog = emit(config, name="ev")
        y, rec = run_host(compile_host(prog, tmp_path / str(seed)), prog, x, record=True)
        y_sim, state, rec_sim = SpiNNaker2Sim.from_config(config).evolve(x, record=True)
        assert np.array_equal(y, y_sim)
        names = record_names(config)
        for key, val in rec_sim.items():
            assert np.array_equal(_bits(rec[names[key]]), _bits(val)), (seed, key)
        for key in ("buf_exc", "buf_inh"):  # the delay rings after the last tick
            for p in config.populations:
                want = np.asarray(state[f"{p.name}.{key}"])
                assert np.array_equal(rec[names[f"{p.name}.{key}"]][:, -1].reshape(want.shape), want), key
        spikes += sum(int(v.sum()) for k, v in rec_sim.items() if k.endswith(".spikes"))
        recurrent += any(pe.population == config.sources[s] for pe in config.pes for s in pe.row_source if s > 0)
    assert spikes > 0 and recurrent > 0  # populations spiked, and some rows come from the own population


def test_tables_narrow_and_one_gather_per_source():
    config = random_config(7)
    prog = emit(config, name="ev")
    flash = {b.name: b for b in prog.memory.buffers if b.region == "flash"}
    ram = {b.name: b for b in prog.memory.buffers if b.region == "ram"}
    assert "syn_pre" not in flash and {"syn_words", "syn_ptr", "syn_base", "syn_first"} <= set(flash)
    rows = sum(len(pe.row_source) for pe in config.pes)
    words = sum(len(pe.words) for pe in config.pes)
    assert flash["syn_ptr"].count == rows + 1 and flash["syn_base"].count == rows
    assert flash["syn_ptr"].ctype == ("uint8_t" if words <= 255 else "uint16_t")
    sizes = {"input": config.n_input, **{p.name: p.size for p in config.populations}}
    blocks = {(config.sources[s], pe.population) for pe in config.pes for s in pe.row_source}
    assert flash["syn_first"].count == sum(sizes[src] + 1 for src, _ in blocks)
    sources = sorted({src for src, _ in blocks}, key=lambda s: config.sources.index(s))
    lists = sorted(n for n in ram if n.startswith("syn_ev"))
    assert len(lists) == len(sources) and all(ram[n].kind == "scratch" for n in lists)
    assert prog.sources["ev.c"].count("ne = 0;") == len(sources)  # one gather per source and tick
