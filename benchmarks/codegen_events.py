"""Benchmark: event-driven loops and sparse weight storage in the generated C of the device SNN numerics.

For every device SNN numerics (``xylo``, ``spinnaker2`` SNN, ``siracusa`` SNN layer chain) and the workloads of
``benchmarks/codegen.py`` (the digits demo network ``Linear(16, 128) -> LIF -> Linear(128, 10) -> LIF`` mapped to
each device, random weights as there, and the W1 Xylo configuration with N = 1000 hidden neurons), plus the
digits network with all but the largest 40 % of its weights pruned to zero ("digits 40 %": sparse layers; the
Siracusa mapper refuses sparser prunings of this untrained network, multiplier underflow), this script
measures, at input densities 1 %, 5 %, 20 % and 50 % (each input channel carries one event per step with that
probability, seeded; for Siracusa the 0/1 raster quantized by ``quantize_input``):

* instructions per step on the emulated Cortex-M4F and RV32IMC cores (``pondlib.codegen.cross``, unicorn; the
  mean over ``--steps`` steps of one sample), and the linked flash and RAM of each build; for Siracusa also the
  cluster C (``emit_chain_cluster``) on 8 emulated RV32 cores: critical-path instructions per step;
* **before**: the same measurement with the device C generators (``codegen*.py`` and ``templates/`` of the three
  chips) of the commit before event-driven loops (``--before``, default ``cd6106d``; extracted read-only with
  ``git archive`` over a copy of this tree's ``pondlib``, run in a subprocess with that copy first on
  ``PYTHONPATH``, so that nothing but the device C differs), and **after**: this working tree's C, defaults;
* parity of the *after* C: host-compiled C against the device simulator (outputs and every recorded state equal,
  bit for bit) and the emulated cores' outputs against the simulator's, on the same inputs ("bit-exact": all
  equal); the table also flags any emulated output that differs from the *before* C's.

Prints one table (instructions before -> after and their ratio per core, flash and RAM per build) and writes
``benchmarks/results/codegen_events.json`` and ``.txt``. Run: ``python benchmarks/codegen_events.py [--steps 16]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
DENSITIES = (0.01, 0.05, 0.2, 0.5)
TARGETS = ("cortex-m4", "rv32")


def _pruned(net, keep: float):
    """``net`` with every Linear weight but the largest ``keep`` fraction (by magnitude) set to zero."""
    import equinox as eqx
    import jax.numpy as jnp

    from pondlib import nn

    for i, layer in enumerate(net.layers):
        if isinstance(layer, nn.Linear):
            w = np.asarray(layer.weight)
            cut = np.quantile(np.abs(w), 1 - keep)
            net = eqx.tree_at(lambda n, i=i: n.layers[i].weight, net, jnp.asarray(np.where(np.abs(w) >= cut, w, 0.0)))
    return net


def _device_configs(label: str, net, x_calib: np.ndarray) -> dict:
    """``{workload: (numerics, config)}`` of ``net`` mapped to Xylo, SpiNNaker2 and Siracusa as in codegen.py."""
    from pondlib.cli.demo_network import one_spike_network
    from pondlib.devices.siracusa.config import config_from_specification as sir_config
    from pondlib.devices.siracusa.report import map_network as sir_map
    from pondlib.devices.spinnaker2.report import configure, map_network
    from pondlib.devices.xylo import mapper
    from pondlib.devices.xylo.config import config_from_specification
    from pondlib.devices.xylo.limits import get_limits
    from pondlib.transform import channel_quantize

    out = {}
    c, ok, msg = config_from_specification(channel_quantize(mapper(net, get_limits("audio3"))))
    if not ok:
        raise RuntimeError(msg)
    out[f"{label} / xylo"] = ("xylo", c)
    spec, _ = map_network(one_spike_network(net), None, "lif_curr_exp")
    out[f"{label} / spinnaker2"] = ("spinnaker2", configure(spec, "benchmark"))
    _, sspec = sir_map(one_spike_network(net), None, x_calib, True)
    c, ok, msg = sir_config(sspec)
    if not ok:
        raise RuntimeError(msg)
    out[f"{label} / siracusa"] = ("siracusa", c)
    return out


def _configs() -> dict:
    """``{workload: (numerics, config)}``: the W1 Xylo configuration, the digits network on every device, and the
    same network with 60 % of its weights pruned (sparse layers: the compressed storage)."""
    import jax

    sys.path.insert(0, str(HERE))
    from xylo_sim import benchmark_config

    from pondlib.cli.demo_network import demo_network
    from pondlib.datasets import load_digits_events

    out = {"W1 Xylo (N=1000)": ("xylo", benchmark_config(1000))}
    net = demo_network(128, key=jax.random.PRNGKey(0))
    data = load_digits_events(T=12, seed=0)
    x_dig = np.concatenate(list(data.x_test[:20]), axis=0)[None, :200].astype(np.float64)
    out.update(_device_configs("digits", net, x_dig))
    out.update(_device_configs("digits 40 %", _pruned(net, 0.4), x_dig))
    return out


def _raster(numerics: str, config, density: float, steps: int, seed: int) -> np.ndarray:
    """(1, steps, N_in) input at ``density`` events per channel and step, as the numerics' C takes it."""
    n_in = int(config.n_input)
    rng = np.random.default_rng(seed)
    x = (rng.random((1, steps, n_in)) < density).astype(np.int64)
    if numerics == "siracusa":
        from pondlib.devices.siracusa.sim import quantize_input

        x = np.asarray(quantize_input(x.astype(np.float64), config), dtype=np.int64)
    return x


def _simulate(numerics: str, config, x: np.ndarray) -> tuple[np.ndarray, dict]:
    if numerics == "xylo":
        from pondlib.devices.xylo.sim import XyloSim

        y, _, rec = XyloSim.from_config(config).evolve(x, record=True)
        return y, dict(rec)
    if numerics == "spinnaker2":
        from pondlib.devices.spinnaker2.codegen import record_names
        from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim

        y, _, rec = SpiNNaker2Sim.from_config(config).evolve(x, record=True)
        names = record_names(config)
        return y, {names[k]: v for k, v in rec.items()}
    from pondlib.devices.siracusa.codegen import record_names
    from pondlib.devices.siracusa.sim import SiracusaSim

    y, _, rec = SiracusaSim(config).evolve(x, record=True)
    names = record_names(config, record=True)
    return y, {names[k]: v for k, v in rec.items()}


def _parity(numerics: str, config, x: np.ndarray, directory: Path) -> dict:
    """Host C (with every record) against the simulator: the number of differing outputs and state values."""
    from pondlib.codegen import compile_host, generate, run_host

    extra = {"record": True} if numerics == "siracusa" else {}
    prog = generate(config, numerics, name="net", **extra)
    y, rec = run_host(compile_host(prog, directory), prog, x, record=True)
    y_ref, rec_ref = _simulate(numerics, config, x)
    diff_out = int((np.asarray(y, np.float64) != np.asarray(y_ref, np.float64).reshape(y.shape)).sum())
    diff_state = 0
    for key, ref in rec_ref.items():
        got = np.asarray(rec[key])
        diff_state += int((got != np.asarray(ref).astype(got.dtype).reshape(got.shape)).sum())
    return {"differing_outputs": diff_out, "differing_states": diff_state, "outputs": int(y.size)}


def measure(steps: int, seed: int, parity: bool) -> list[dict]:
    """Instructions per step, flash and RAM of each workload's C at each density (this tree's pondlib)."""
    from pondlib.codegen import generate
    from pondlib.codegen.cross import build_cross, run_cross

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for w, (workload, (numerics, config)) in enumerate(_configs().items()):
            prog = generate(config, numerics, name="net")
            row: dict = {"workload": workload, "numerics": numerics, "flash_bytes": prog.memory.flash_bytes,
                         "ram_bytes": prog.memory.ram_bytes,
                         "notes": [n for n in prog.notes if "layout" in n or "vent-driven" in n]}  # fmt: skip
            builds = {t: build_cross(prog, t, Path(tmp) / f"w{w}" / t) for t in TARGETS}
            cluster = _cluster_build(config, Path(tmp) / f"w{w}" / "cluster") if numerics == "siracusa" else None
            for t, b in builds.items():
                row[f"{t}_flash_bytes"], row[f"{t}_ram_bytes"] = b.flash_bytes, b.ram_bytes
            row["densities"] = {}
            for density in DENSITIES:
                x = _raster(numerics, config, density, steps, seed)
                cell: dict = {"input_events_per_step": float((x != 0).sum() / steps)}
                for t, b in builds.items():
                    y_t, _, ips = run_cross(b, x)
                    cell[f"{t}_instructions_per_step"] = ips
                    cell[f"{t}_outputs"] = np.asarray(y_t).tolist()
                if cluster is not None:
                    from pondlib.codegen.cluster import run_cluster

                    run = run_cluster(cluster, x)
                    cell["cluster8_span_per_step"] = run.span / run.steps
                    cell["cluster8_outputs"] = np.asarray(run.y).tolist()
                if parity:
                    cell.update(_parity(numerics, config, x, Path(tmp) / f"w{w}" / f"host{density}"))
                    y_ref = np.asarray(_simulate(numerics, config, x)[0], np.float64)
                    for t in TARGETS + (("cluster8",) if cluster is not None else ()):
                        y_t = np.asarray(cell[f"{t}_outputs"], np.float64)
                        cell[f"{t}_equals_simulator"] = bool(np.array_equal(y_t, y_ref.reshape(y_t.shape)))
                row["densities"][str(density)] = cell
            rows.append(row)
            print(f"measured {workload}", file=sys.stderr, flush=True)
    return rows


def _cluster_build(config, directory: Path):
    """The Siracusa chain as cluster C (``emit_chain_cluster``, default L1), built for 8 emulated RV32 cores."""
    from pondlib.codegen.cluster import build_cluster
    from pondlib.devices.siracusa.codegen_cluster import emit_chain_cluster

    return build_cluster(emit_chain_cluster(config, name="net"), directory, cores=8)


#: What "before" takes from the commit ``--before``: the device C generators of the SNN numerics, their templates.
BEFORE_PATHS = (
    "pondlib/devices/xylo/codegen.py",
    "pondlib/devices/xylo/templates",
    "pondlib/devices/spinnaker2/codegen.py",
    *(f"pondlib/devices/spinnaker2/templates/snn_{k}.c" for k in ("output", "population", "projection", "slot")),
    "pondlib/devices/siracusa/codegen.py",
    "pondlib/devices/siracusa/codegen_cluster.py",
    *(f"pondlib/devices/siracusa/templates/{k}.c" for k in ("layer", "lif", "gemm", "requant_layer")),
)


def _before(rev: str, steps: int, seed: int) -> list[dict]:
    """:func:`measure` with the device C generators of commit ``rev`` (:data:`BEFORE_PATHS`, read-only ``git
    archive``) over a copy of this tree's pondlib (so that only the device C differs), in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(ROOT / "pondlib", tree / "pondlib", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.rmtree(tree / BEFORE_PATHS[1])  # the whole folder as it was (no template of the new kernels)
        tar = subprocess.run(["git", "archive", rev, *BEFORE_PATHS], cwd=ROOT, check=True, capture_output=True)
        (Path(tmp) / "t.tar").write_bytes(tar.stdout)
        with tarfile.open(Path(tmp) / "t.tar") as f:
            f.extractall(tree, filter="data")
        out = Path(tmp) / "before.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
        code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import codegen_events as m; "
                f"json.dump(m.measure({steps}, {seed}, False), open({str(out)!r}, 'w'))")  # fmt: skip
        subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, check=True)
        return json.loads(out.read_text())


def table(before: list[dict], after: list[dict], rev: str) -> str:
    lines = [f"Instructions per step, before ({rev}) -> after (this tree), emulated; flash / RAM in bytes (linked)"]
    head = f"{'workload':<22} {'density':>7} {'ev/step':>7} {'M4F before':>11} {'M4F after':>10} {'x':>6} " \
           f"{'RV32 before':>11} {'RV32 after':>10} {'x':>6}  parity"  # fmt: skip
    lines.append(head)
    lines.append("-" * len(head))
    for b, a in zip(before, after):
        for d, cell in a["densities"].items():
            bc = b["densities"][d]
            m0, m1 = bc["cortex-m4_instructions_per_step"], cell["cortex-m4_instructions_per_step"]
            r0, r1 = bc["rv32_instructions_per_step"], cell["rv32_instructions_per_step"]
            par = cell.get("differing_outputs")
            emulated = all(cell.get(f"{t}_equals_simulator") for t in TARGETS)
            ok = "bit-exact" if par == 0 and cell.get("differing_states") == 0 and emulated else f"{par} differ"
            same = all(bc[f"{t}_outputs"] == cell[f"{t}_outputs"] for t in TARGETS)
            lines.append(f"{a['workload']:<22} {float(d):>7.0%} {cell['input_events_per_step']:>7.1f} {m0:>11,.0f} "
                         f"{m1:>10,.0f} {m0 / m1:>5.2f}x {r0:>11,.0f} {r1:>10,.0f} {r0 / r1:>5.2f}x  {ok}"
                         f"{'' if same else ' (emulated outputs differ from before!)'}")  # fmt: skip
    lines.append("")
    lines.append("Siracusa cluster C (emit_chain_cluster), 8 emulated RV32 cores: critical-path instructions per step")
    for b, a in zip(before, after):
        for d, cell in a["densities"].items():
            if "cluster8_span_per_step" in cell:
                s0, s1 = b["densities"][d]["cluster8_span_per_step"], cell["cluster8_span_per_step"]
                ok = "bit-exact" if cell.get("cluster8_equals_simulator") else "DIFFERS"
                lines.append(
                    f"{a['workload']:<22} {float(d):>7.0%} {s0:>11,.0f} -> {s1:>10,.0f} {s0 / s1:>5.2f}x  {ok}"
                )
    lines.append("")
    head = f"{'workload':<22} {'flash before':>12} {'flash after':>11} {'RAM before':>10} {'RAM after':>9}" \
           f" {'M4F flash b/a':>15} {'M4F RAM b/a':>13} {'RV32 flash b/a':>15} {'RV32 RAM b/a':>13}"  # fmt: skip
    lines.append(head)
    lines.append("-" * len(head))
    for b, a in zip(before, after):
        cells = [f"{b[f'{t}_{k}_bytes']:,}/{a[f'{t}_{k}_bytes']:,}" for t in TARGETS for k in ("flash", "ram")]
        lines.append(f"{a['workload']:<22} {b['flash_bytes']:>12,} {a['flash_bytes']:>11,} {b['ram_bytes']:>10,} "
                     f"{a['ram_bytes']:>9,} {cells[0]:>15} {cells[1]:>13} {cells[2]:>15} {cells[3]:>13}")  # fmt: skip
    lines.append("")
    lines += [f"{a['workload']}: {'; '.join(a['notes'])}" for a in after]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=16, help="time steps emulated per density and core")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--before", default="cd6106d", help="the commit whose C is 'before'")
    ap.add_argument("--out", default=str(HERE / "results" / "codegen_events.json"))
    args = ap.parse_args(argv)
    after = measure(args.steps, args.seed, True)
    before = _before(args.before, args.steps, args.seed)
    text = table(before, after, args.before)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": "codegen_events", "platform": platform.platform(), "python": sys.version.split()[0],
               "steps": args.steps, "seed": args.seed, "before_rev": args.before, "densities": list(DENSITIES),
               "before": before, "after": after}  # fmt: skip
    for row in before + after:  # the emulated outputs served the comparison in the table; not kept
        for cell in row["densities"].values():
            for t in (*TARGETS, "cluster8"):
                cell.pop(f"{t}_outputs", None)
    out.write_text(json.dumps(payload, indent=1))
    out.with_suffix(".txt").write_text(text + "\n")
    ok = all(c.get("differing_outputs") == 0 and c.get("differing_states") == 0
             and all(c.get(f"{t}_equals_simulator", True) for t in (*TARGETS, "cluster8"))
             for a in after for c in a["densities"].values())  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
