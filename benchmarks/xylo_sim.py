"""Benchmark: pondlib's Xylo simulator (its C kernel and its numba kernel) against the reference ``xylosim``,
side by side in one process.

For N hidden in {128, 512, 1000}: one random legal configuration (16 inputs, k = 2 synapses, ~5 %
recurrent density with fan-out <= 64, 8 outputs), Poisson input at 0.05 events per channel per step,
T = 10000 steps. Measured in interleaved rounds (each round runs every contender in turn, then again in
the reverse order, and counts the mean of the two runs, so that load changes and the cost of going first
hit all alike; the median over rounds is reported, after one warm-up call each):

* steps/s for one sample, record off and record on (xylosim always records, so its number is the same);
* sample-steps/s for a batch of 64 (pondlib: one parallel call; xylosim has no batch dimension, so its
  throughput is the loop over samples, measured over ``--xylosim-samples`` samples);
* ratios pondlib / xylosim for each of pondlib's two kernels (``c``: ``csrc/xylo_sim.c``, the default
  where a C compiler exists; ``numba``: the fallback), the ratio C / numba, and a parity check (each
  kernel's output and records == xylosim's).

Run: ``python benchmarks/xylo_sim.py [--rounds 5] [--sizes 128 512 1000]``. Prints a rich table, one
line per size with the headline ratios (single sample and B = 64 against xylosim, C against numba), and writes
``benchmarks/results/xylo_sim.json`` (with the machine's load average before and after: on a shared
machine, compare ratios, not absolute rates).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.sim import XyloSim

T_STEPS = 10_000
N_IN = 16
N_OUT = 8
RATE = 0.05  # events per channel per step
DENSITY_REC = 0.05  # fraction of hidden neurons each hidden neuron projects to
BATCH = 64
ENGINES = ("c", "numba")  # pondlib's two kernels (XyloSim.engine)


def benchmark_config(n_hidden: int, seed: int = 0) -> XyloConfig:
    """A random legal configuration with moderate activity (a few % of neurons spike per step)."""
    rng = np.random.default_rng(seed)
    k = 2
    # Each input channel reaches ~25 % of the hidden synapses; recurrent weights are weak so the
    # network is input-driven (about 5 % of hidden neurons spike per step, not a runaway).
    w_in = rng.integers(-128, 128, size=(N_IN, n_hidden, k)) * (rng.random((N_IN, n_hidden, k)) < 0.25)
    w_rec = np.zeros((n_hidden, n_hidden, k), dtype=np.int64)
    fan = min(64, max(1, int(round(DENSITY_REC * n_hidden))))
    for j in range(n_hidden):
        post = rng.choice(n_hidden, size=fan, replace=False)
        syn = rng.integers(0, k, size=fan)
        w_rec[j, post, syn] = rng.choice(np.r_[-16:0, 1:16], size=fan)
    w_out = rng.integers(-128, 128, size=(n_hidden, N_OUT))
    return XyloConfig(
        weights_in=w_in,
        weights_rec=w_rec,
        weights_out=w_out,
        dash_mem=np.full(n_hidden, 2),
        dash_syn=np.full(n_hidden, 1),
        dash_syn_2=np.full(n_hidden, 3),
        dash_mem_out=np.full(N_OUT, 3),
        dash_syn_out=np.full(N_OUT, 2),
        threshold=rng.integers(900, 1100, size=n_hidden),
        bias=np.zeros(n_hidden, dtype=np.int64),
        threshold_out=np.full(N_OUT, 600),
        bias_out=np.zeros(N_OUT, dtype=np.int64),
        aliases=-np.ones(n_hidden, dtype=np.int64),
        weight_shift_in=2,
        weight_shift_rec=0,
        weight_shift_out=0,
        bias_enable=False,
        dt=1e-3,
    )


def _synapses(w: np.ndarray, synapse_cls) -> list:
    if w.ndim == 2:
        w = w[:, :, None]
    out = []
    for pre in range(w.shape[0]):
        post, syn = np.nonzero(w[pre])
        out.append([synapse_cls(int(p), int(s), int(w[pre, p, s])) for p, s in zip(post, syn)])
    return out


def xylosim_layer(config: XyloConfig):
    """A xylosim layer for ``config`` plus the argument tuple (xylosim does not own its synapses:
    the caller must keep the arguments alive as long as the layer)."""
    from xylosim.v2 import XyloLayer, XyloSynapse

    k = config.n_synapses
    args = (
        _synapses(config.weights_in, XyloSynapse),
        _synapses(config.weights_rec, XyloSynapse),
        _synapses(config.weights_out, XyloSynapse),
        [[int(a)] if a >= 0 else [] for a in config.aliases],
        config.threshold.tolist(),
        config.threshold_out.tolist(),
        bool(config.bias_enable),
        config.bias.tolist(),
        config.bias_out.tolist(),
        int(config.weight_shift_in),
        int(config.weight_shift_rec),
        int(config.weight_shift_out),
        config.dash_mem.tolist(),
        config.dash_mem_out.tolist(),
        [[int(a)] if k == 1 else [int(a), int(b)] for a, b in zip(config.dash_syn, config.dash_syn_2)],
        [[int(v)] for v in config.dash_syn_out],
        "bench",
    )
    return XyloLayer(*args), args


def _interleaved(fns: dict, rounds: int) -> dict[str, float]:
    """Median seconds of each callable over ``rounds`` rounds (after one warm-up call each). A round runs
    every contender in turn, then again in the reverse order, and counts the mean of its two runs: a change
    of machine load hits every contender alike, and so does the cost of going first. (Of two contenders
    that allocate the same large arrays, the records, the first often waits for the operating system to
    find the memory, numpy asking for huge pages, which may need compaction; the second finds it ready.)"""
    for fn in fns.values():
        fn()  # warm-up (compilation, caches)
    times: dict[str, list[float]] = {key: [] for key in fns}
    keys = list(fns)
    for _ in range(rounds):
        spent = dict.fromkeys(keys, 0.0)
        for key in keys + keys[::-1]:
            t0 = time.perf_counter()
            fns[key]()
            spent[key] += time.perf_counter() - t0
        for key in keys:
            times[key].append(spent[key] / 2)
    return {key: statistics.median(v) for key, v in times.items()}


def _parity(config: XyloConfig, x: np.ndarray, engine: str) -> bool:
    layer, _keep = xylosim_layer(config)
    T = x.shape[0]
    ref_out = np.array(layer.evolve(x.tolist()), dtype=np.int64).reshape(T, -1)
    n_hid, n_out = config.n_hidden, config.n_output
    ref = {
        "Vmem": np.array(layer.rec_v_mem).reshape(n_hid, T).T,
        "Isyn": np.array(layer.rec_i_syn).reshape(n_hid, T).T,
        "Isyn2": np.array(layer.rec_i_syn2).reshape(n_hid, T).T,
        "Spikes": np.array(layer.rec_recurrent_spikes).reshape(T, n_hid),
        "Vmem_out": np.array(layer.rec_v_mem_out).reshape(n_out, T).T,
        "Isyn_out": np.array(layer.rec_i_syn_out).reshape(n_out, T).T,
    }
    sim = XyloSim.from_config(config)
    sim._engine = engine
    out, _, rec = sim.evolve(x, record=True)
    return bool(np.array_equal(out, ref_out) and all(np.array_equal(rec[k], ref[k]) for k in ref))


def run(sizes: list[int], rounds: int, xylosim_samples: int, seed: int = 0) -> list[dict]:
    results = []
    for n in sizes:
        config = benchmark_config(n, seed)
        problems = validate_config(config)
        if problems:
            raise SystemExit(f"benchmark configuration invalid: {problems}")
        rng = np.random.default_rng(seed + 1)
        x1 = rng.poisson(RATE, size=(T_STEPS, N_IN)).astype(np.int64)
        xb = rng.poisson(RATE, size=(BATCH, T_STEPS, N_IN)).astype(np.int64)

        sims = {}
        for engine in ENGINES:
            sims[engine] = XyloSim.from_config(config)
            sims[engine]._engine = engine

        def pond(engine, x, record):
            sim = sims[engine]

            def go():
                sim.reset_state()
                return sim.evolve(x, record=record)

            return go

        layer, _keep = xylosim_layer(config)
        x1_list = x1.tolist()

        def xs_one():
            layer.reset_all()
            layer.evolve(x1_list)

        xs_inputs = [xb[b].tolist() for b in range(xylosim_samples)]

        def xs_loop():
            for xin in xs_inputs:
                layer.reset_all()
                layer.evolve(xin)

        fns = {}  # the two kernels side by side in each mode
        for mode, x, record in (("off", x1, False), ("on", x1, True), ("batch", xb, False)):
            fns.update({(engine, mode): pond(engine, x, record) for engine in ENGINES})
        med = _interleaved({**fns, "xs": xs_one, "xs_loop": xs_loop}, rounds)
        sim = sims["c"]
        sim.reset_state()
        out, _, rec = sim.evolve(x1, record=True)
        hidden_rate = float(rec["Spikes"].astype(bool).mean())

        r = {
            "n_hidden": n,
            "T": T_STEPS,
            "batch": BATCH,
            "hidden_spike_fraction": hidden_rate,
            "output_spikes": int(out.sum()),
            "xylosim_steps_per_s": T_STEPS / med["xs"],
            "xylosim_batch_sample_steps_per_s": xylosim_samples * T_STEPS / med["xs_loop"],
            "xylosim_batch_samples_measured": xylosim_samples,
            "rounds": rounds,
        }
        for engine in ENGINES:
            r[f"{engine}_steps_per_s_record_off"] = T_STEPS / med[engine, "off"]
            r[f"{engine}_steps_per_s_record_on"] = T_STEPS / med[engine, "on"]
            r[f"{engine}_batch_sample_steps_per_s"] = BATCH * T_STEPS / med[engine, "batch"]
            r[f"{engine}_ratio_record_off"] = r[f"{engine}_steps_per_s_record_off"] / r["xylosim_steps_per_s"]
            r[f"{engine}_ratio_record_on"] = r[f"{engine}_steps_per_s_record_on"] / r["xylosim_steps_per_s"]
            r[f"{engine}_ratio_batch"] = r[f"{engine}_batch_sample_steps_per_s"] / r["xylosim_batch_sample_steps_per_s"]
            r[f"{engine}_parity"] = _parity(config, x1[:2000], engine)
        for mode in ("record_off", "record_on", "batch"):
            r[f"c_over_numba_{mode}"] = r[f"c_ratio_{mode}"] / r[f"numba_ratio_{mode}"]
        r["parity"] = all(r[f"{engine}_parity"] for engine in ENGINES)
        results.append(r)
        print(f"N={n}: done (parity {'OK' if r['parity'] else 'FAIL'})", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 512, 1000])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    ap.add_argument(
        "--xylosim-samples",
        type=int,
        default=2,
        help="samples in xylosim's batch loop (its throughput does not depend on it)",
    )
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "xylo_sim.json"))
    args = ap.parse_args(argv)

    load_before = os.getloadavg()
    results = run(args.sizes, args.rounds, args.xylosim_samples)
    load_after = os.getloadavg()

    from rich.console import Console
    from rich.table import Table

    title = f"Xylo simulator: pondlib's C and numba kernels vs xylosim (T={T_STEPS}, 16 in, 8 out, Poisson {RATE})"
    table = Table(title=title)
    heads = ("N hid", "spk frac", "kernel", "steps/s off", "x xylosim", "steps/s on", "x xylosim")
    for col in (*heads, f"sample-steps/s B={BATCH}", "x xylosim", "parity"):
        table.add_column(col, justify="right")
    for r in results:
        xs, xb = r["xylosim_steps_per_s"], r["xylosim_batch_sample_steps_per_s"]
        spk = f"{r['hidden_spike_fraction']:.3f}"
        table.add_row(str(r["n_hidden"]), spk, "xylosim", f"{xs:,.0f}", "1.0", f"{xs:,.0f}", "1.0")
        table.add_row("", "", "", "", "", "", "", f"{xb:,.0f}", "1.0", "")
        for engine in ENGINES:
            table.add_row(
                "",
                "",
                engine,
                f"{r[f'{engine}_steps_per_s_record_off']:,.0f}",
                f"{r[f'{engine}_ratio_record_off']:.1f}",
                f"{r[f'{engine}_steps_per_s_record_on']:,.0f}",
                f"{r[f'{engine}_ratio_record_on']:.1f}",
                f"{r[f'{engine}_batch_sample_steps_per_s']:,.0f}",
                f"{r[f'{engine}_ratio_batch']:.1f}",
                "OK" if r[f"{engine}_parity"] else "FAIL",
            )
    console = Console(width=200)
    console.print(table)
    for r in results:
        console.print(
            f"N={r['n_hidden']}: C / xylosim = {r['c_ratio_record_off']:.1f}x single sample (record off), "
            f"{r['c_ratio_batch']:.1f}x batched (B={BATCH}); C / numba = {r['c_over_numba_record_off']:.2f}x "
            f"record off, {r['c_over_numba_record_on']:.2f}x record on, {r['c_over_numba_batch']:.2f}x batched; "
            f"medians of {r['rounds']} interleaved rounds, load average {load_before[0]:.1f} before, "
            f"{load_after[0]:.1f} after ({os.cpu_count()} CPUs)"
        )

    payload = {
        "benchmark": "xylo_sim",
        "units": "steps/s (single sample), sample-steps/s (batch)",
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1min_before": load_before[0],
            "load_average_1min_after": load_after[0],
        },
        "method": "medians of interleaved rounds (each kernel's single off/on and batch, xylosim single, xylosim "
        "batch loop, in turn, then in reverse order; a round counts the mean of each contender's two runs), one "
        "process, after one warm-up call each",
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {out}")
    return 0 if all(r["parity"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
