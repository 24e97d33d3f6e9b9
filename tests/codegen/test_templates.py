"""The C templates: the strict renderer, and every template file of every emitter used in full.

The renderer (``pondlib.cprogram.templating``) is checked on a small package of its own (placeholders, the
indentation of multi-line values, optional lines, sections, and every way a template and its values can
disagree). The emitters are then run, under :func:`trace`, on models that reach every kernel variant: every
template file of ``pondlib.cprogram``, ``pondlib.codegen`` and each chip must be rendered, each of its
placeholders filled at least once and each of its sections taken both ways (a line that no model reaches is
dead template text).
"""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.codegen import generate
from pondlib.codegen.cross import freestanding_sources
from pondlib.cprogram import templating as templates
from pondlib.cprogram.program import Buffer, Constant, build_program
from pondlib.cprogram.templating import SUFFIXES, load, render, template_names, trace
from pondlib.devices import registry
from pondlib.errors import CodegenError
from pondlib.nn import layers, neurons

ROOT = Path(__file__).resolve().parents[2]
NIR = ROOT / "tests" / "data" / "nir"
#: The packages whose ``templates/`` folder holds C templates: the program model, the float numerics and
#: every chip with C numerics.
PACKAGES = ("pondlib.cprogram", "pondlib.codegen") + tuple(
    f"pondlib.devices.{d.name}" for d in registry.devices() if d.has_c
)

_TEMPLATES = {
    "kernel.c": (
        "## a test kernel: $n values\n"
        "/* $src[$n] -> $dst[$n] */\n"
        "for (int32_t i = 0; i < $n; ++i) {\n"
        "    $body\n"
        "##if scaled\n"
        "    ${dst}_tmp[i] *= $scale;\n"
        "##if twice\n"
        "    ${dst}_tmp[i] *= $scale;\n"
        "##end\n"
        "##else\n"
        "    /* unscaled */\n"
        "##end\n"
        "    $optional\n"
        "}\n"
        "cost: $$5\n"
    ),
    "bad_dollar.c": "x = $ 1;\n",
    "bad_open.c": "##if a\nx;\n",
    "bad_end.c": "x;\n##end\n",
    "bad_else.c": "##if a\nx;\n##else\ny;\n##else\nz;\n##end\n",
    "bad_both.c": "##if a\n$a\n##end\n",
    "bad_section_name.c": "##if 1a\nx;\n##end\n",
    "bad_directive.c": "##if a\nx;\n##elif b\ny;\n##end\n",
}


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    """A package ``tplpkg`` with the templates above, on ``sys.path`` for this module."""
    root = tmp_path_factory.mktemp("tplroot")
    folder = root / "tplpkg" / "templates"
    folder.mkdir(parents=True)
    (root / "tplpkg" / "__init__.py").write_text("")
    for name, text in _TEMPLATES.items():
        (folder / name).write_text(text)
    (folder / "notes.txt").write_text("not a template: no template suffix")
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(root))
    yield "tplpkg"
    mp.undo()
    load.cache_clear()


def _kernel(pkg, **over):
    values = dict(n=4, src="x", dst="h1", body="a = 1;\nb = 2;\n\nc = 3;\n", scaled=True, twice=False, scale="0x1p-1f")
    values["optional"] = ""
    values.update(over)
    return render(pkg, "kernel.c", **values)


def test_placeholders_fill_indent_and_drop_empty_lines(pkg):
    assert _kernel(pkg) == (
        "/* x[4] -> h1[4] */\n"
        "for (int32_t i = 0; i < 4; ++i) {\n"
        "    a = 1;\n"
        "    b = 2;\n"
        "\n"
        "    c = 3;\n"
        "    h1_tmp[i] *= 0x1p-1f;\n"
        "}\n"
        "cost: $5"
    )
    assert "    done();\n}" in _kernel(pkg, optional="done();")


def test_sections_choose_lines_and_nest(pkg):
    assert _kernel(pkg, twice=True).count("*= 0x1p-1f") == 2
    text = _kernel(pkg, scaled=False)
    assert "/* unscaled */" in text and "*=" not in text
    # a placeholder and a section that only a dropped section holds need no value
    values = dict(n=1, src="x", dst="y", body="", scaled=False, optional="")
    assert "unscaled" in render(pkg, "kernel.c", **values)
    with trace() as seen:
        _kernel(pkg, scaled=False)
        _kernel(pkg, twice=True)
    assert [r.name for r in seen] == ["kernel.c", "kernel.c"]
    assert seen[0].sections == {("scaled", False)} and seen[1].sections == {("scaled", True), ("twice", True)}
    assert "scale" in seen[1].filled and "scale" not in seen[0].filled


def test_a_missing_value_names_the_template_and_the_key(pkg):
    values = dict(n=4, src="x", dst="h1", body="", scaled=True, twice=False, optional="")
    with pytest.raises(CodegenError, match=r"tplpkg/templates/kernel\.c.*\$scale") as err:
        render(pkg, "kernel.c", **values)
    assert err.value.value == "$scale"
    with pytest.raises(CodegenError, match="kernel.c.*section without a value.*twice"):
        render(pkg, "kernel.c", **{k: v for k, v in values.items() if k != "twice"}, scale="2")
    # the same on a shipped template
    with pytest.raises(CodegenError, match=r"pondlib\.cprogram/templates/reset_fill\.c.*\$value"):
        render("pondlib.cprogram", "reset_fill.c", buf="v", count=3)


def test_unused_and_mistyped_values_are_refused(pkg):
    with pytest.raises(CodegenError, match="kernel.c.*does not use.*colour"):
        _kernel(pkg, colour="red")
    with pytest.raises(CodegenError, match="kernel.c.*placeholder value.*n=bool"):
        _kernel(pkg, n=True)
    with pytest.raises(CodegenError, match="kernel.c.*placeholder value.*float"):
        _kernel(pkg, scale=0.5)
    with pytest.raises(CodegenError, match="kernel.c.*section value.*scaled='yes'"):
        _kernel(pkg, scaled="yes")
    assert "h1_tmp[i] *= 3;" in _kernel(pkg, scale=np.int64(3))  # any integer


@pytest.mark.parametrize(
    "name, match",
    [
        ("bad_dollar.c", "starts no placeholder"),
        ("bad_open.c", "unclosed ##if"),
        ("bad_end.c", "unbalanced ##end"),
        ("bad_else.c", "unbalanced ##else"),
        ("bad_both.c", "placeholder and as section"),
        ("bad_section_name.c", "section name"),
        ("bad_directive.c", "template line.*##elif"),
        ("notes.txt", "template"),
        ("missing.c", "template"),
    ],
)
def test_malformed_or_unknown_templates_are_refused(pkg, name, match):
    with pytest.raises(CodegenError, match=match) as err:
        render(pkg, name, a=True)
    assert name in str(err.value) or pkg in str(err.value)


def test_template_names_lists_only_template_files(pkg):
    assert "notes.txt" not in template_names(pkg) and "kernel.c" in template_names(pkg)
    assert template_names("pondlib.nn") == ()  # no templates/ folder


# ------------------------------------------------------------------------------------------------
# every shipped template is used in full
# ------------------------------------------------------------------------------------------------
def test_every_template_folder_holds_only_shipped_template_files():
    """pyproject ships ``templates/*.c``, ``*.h`` and ``*.tmpl``: a file with another ending would be
    missing from the wheel."""
    for package in PACKAGES:
        folder = importlib.resources.files(package) / templates.FOLDER
        names = sorted(p.name for p in folder.iterdir())
        assert names, package
        assert all(n.endswith(SUFFIXES) for n in names), (package, names)
        assert list(template_names(package)) == names


def test_the_shared_templates_name_no_chip():
    """What the program model and the float numerics emit is the same for every chip."""
    words = re.compile(r"(?<![a-z0-9])(" + "|".join(registry.BUILTIN) + r")(?![a-z0-9])", re.IGNORECASE)
    for package in ("pondlib.cprogram", "pondlib.codegen"):
        for name in template_names(package):
            text = (importlib.resources.files(package) / templates.FOLDER / name).read_text()
            assert not words.search(text.replace("_", " ")), (package, name)


def _program_models():
    """build_program with every kind of state reset, and the cross-build sources."""
    prog = build_program(
        "acc",
        "int32",
        constants=[Constant("gain", "int32_t", [2, -3])],
        buffers=[
            Buffer("total", "int32_t", 2, "state", init=[5, -7]),
            Buffer("v", "float", 2, "state", init=0.25),
            Buffer("z", "int8_t", 2, "state"),
            Buffer("tmp", "int32_t", 2, "scratch", (0, 1)),
        ],
        step_body="for (int i = 0; i < 2; ++i) { tmp[i] = gain[i] * x[i]; total[i] += tmp[i]; y[i] = total[i]; }",
        n_in=2,
        in_ctype="int32_t",
        n_out=2,
        out_ctype="int32_t",
    )
    freestanding_sources(prog)


def _float32_models():
    from pondlib.interop.nir import load_nir

    k = jax.random.split(jax.random.PRNGKey(5), 8)
    rng = np.random.default_rng(9)
    n = 4
    nets = [
        nn.Sequential(
            nn.Linear(6, 2 * n, key=k[0], bias=np.linspace(-0.1, 0.2, 2 * n)),
            nn.LIF((2 * n, n), tau_syn=[0.002, 0.01], has_rec=True, key=k[1], max_spikes_per_dt=3),
            nn.Linear(n, n, key=k[2]),
            nn.LIF(n),
            layers.Scale(n, scale=np.linspace(0.5, 2.0, n)),
            neurons.CubaLIF(n, tau_mem=0.02, tau_syn=0.005, r=2.0, v_leak=0.1, v_threshold=0.3, dt=1e-3),
            layers.Delay(n, delay=np.arange(n) % 3 * 1e-3, dt=1e-3),
            layers.Delay(n, delay=np.full(n, 2e-3), dt=1e-3),
            neurons.NIRLIF(n, tau=0.01, r=3.0, v_leak=0.0, v_threshold=0.2, dt=1e-3, reset="subtract"),
            nn.Residual(nn.Linear(n, n, key=k[3]), neurons.IF(n, r=1.5, v_threshold=0.5, reset="zero")),
            neurons.Threshold(n, threshold=0.1),
            neurons.Integrator(n, r=0.5),
        ),
        nn.Sequential(
            layers.Conv2d(
                (2, 4, 4), weight=rng.normal(size=(4, 1, 3, 3)), bias=rng.normal(size=4), padding=1, groups=2
            ),
            layers.SumPool2d((4, 4, 4), kernel_size=2),
            layers.Conv2d((4, 2, 2), weight=rng.normal(size=(3, 4, 2, 2)), stride=2),
            layers.Flatten((3, 1, 1)),
            layers.Conv1d((3, 1), weight=rng.normal(size=(2, 3, 1))),
            layers.AvgPool2d((2, 1, 1), kernel_size=(1, 1)),
        ),
        load_nir(NIR / "braille" / "braille_noDelay_bias_zero.nir", dt=None).module,  # a graph with a cycle
    ]
    for net in nets:
        generate(net, "float32", name="f")
    # a single LIF without recorded spikes: a one-output dense Linear, no scratch arena at all (issue 33)
    lif = neurons.NIRLIF(1, tau=0.01, r=1.0, v_leak=0.0, v_threshold=0.1, v_reset=0.25, dt=1e-3)
    tiny = nn.Sequential(nn.Linear(1, 1, weight=[[1.0]]), lif)
    generate(tiny, "float32", name="f", record=False)


def _xylo_models():
    from pondlib.devices.xylo.config import XyloConfig
    from tests.devices.xylo.xylosim_oracle import random_config

    rng = np.random.default_rng(1)
    for i in range(12):
        generate(random_config(rng, max_hidden=12), "xylo", name="xy", layout=("auto", "dense", "sparse")[i % 3])
    silent = dict(dash_mem=[1], dash_syn=[1], dash_syn_2=[0], dash_mem_out=[1], dash_syn_out=[1], threshold=[60])
    silent.update(bias=[0], threshold_out=[40], bias_out=[0], aliases=[-1])
    cfg = XyloConfig(
        weights_in=np.array([[[100]]]), weights_rec=np.zeros((1, 1, 1)), weights_out=np.zeros((1, 1)), **silent
    )
    generate(cfg, "xylo", name="xy")  # no recurrent or readout weight: the spike counts are only cleared


def _spinnaker2_models():
    from pondlib.devices.spinnaker2.dnn import DNNConfig, DNNLayerConfig
    from tests.devices.spinnaker2.test_codegen import OPTION_GRID, random_config, random_dnn

    for seed, options in enumerate(OPTION_GRID):  # every neuron model and every option
        generate(random_config(seed), "spinnaker2", name="snn", options=options, record=bool(seed % 2))
    for seed in range(8):
        generate(random_dnn(seed), "spinnaker2", name="dnn", record=bool(seed % 2))
    unshifted = DNNLayerConfig(
        "fc1", np.ones((2, 2), np.int64), np.zeros(2, np.int64), 0, False, ((0, 2),), 0, 0, 0, 0, 0
    )
    generate(DNNConfig((unshifted,), 0, 32, "wrap"), "spinnaker2", name="dnn")  # shift 0: no floor shift


def _siracusa_models():
    from pondlib.devices.siracusa import QGemm, SiracusaConfig
    from tests.devices.siracusa.test_codegen import random_config

    for seed in range(40):
        generate(random_config(seed), "siracusa", name="sir", validate=False, record=bool(seed % 2))
    for seed in range(12):  # every QGemm layout (compressed rows: gemm_sparse.c)
        layout = ("sparse", "events", "dense")[seed % 3]
        generate(random_config(seed), "siracusa", name="sir", validate=False, layout=layout)
    exact = SiracusaConfig(n_input=2, layers=(QGemm("fc", weight=[[1], [2]]),))
    generate(exact, "siracusa", name="sir")  # no wrapping arithmetic: no helper at all
    # operator graphs (graph_codegen): the every-op graph recorded and not, and a one-op graph
    from tests.devices.siracusa.test_graph_codegen import _tiny, _with_shapes, every_op_graph

    for record in (False, True):
        generate(_with_shapes(every_op_graph()), "siracusa", name="g", record=record)
    generate(_tiny("Relu"), "siracusa", name="g")
    # the float islands of QDQ graphs: softmax and layer norms with and without gamma / beta, then a softmax alone
    from tests.devices.siracusa.test_graph_codegen import _island_attrs, island_graph

    generate(island_graph(), "siracusa", name="g")
    generate(_tiny("QSoftmax", _island_attrs(0.1, 0, -128, 127, 1 / 256, -128, -128, 127, 1)), "siracusa", name="g")
    # the cluster chains (codegen_cluster): tiled (conv rows, GEMM weight tiles, LIF) double and single buffered,
    # recorded; chains without L2 buffers (one GEMM writing y), untiled
    import numpy as np

    from pondlib.devices.siracusa import QLIF, QConv2d, RequantShift
    from pondlib.devices.siracusa.codegen_cluster import emit_chain_cluster

    conv = QConv2d("c", weight=np.ones((3, 3, 2, 4), dtype=int), in_shape=(6, 5, 2), padding=1, bias=[1, 2, 3, 4],
                   requant=RequantShift(mul=[1, 2, 3, 4]))  # fmt: skip
    chain = SiracusaConfig(n_input=60, layers=(
        conv, QGemm("g", weight=np.ones((120, 16), dtype=int)),
        QLIF("l", beta_mul=np.arange(16), in_mul=1, add=0, shift=4, threshold=np.arange(1, 17))))  # fmt: skip
    for double in (True, False):
        emit_chain_cluster(chain, l1_bytes=600, double_buffer=double, record=True, validate=False)
    emit_chain_cluster(exact, validate=False)
    for seed in range(12):
        emit_chain_cluster(random_config(seed), validate=False, record=bool(seed % 2))
    # the cluster C (graph_codegen_cluster): row- and column-tiled and whole-tensor ops, double and single
    # buffered, element-wise (values over the cores) and per-row ops, MatMul / Gemm tiles
    from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster
    from tests.devices.siracusa.test_graph_cluster import requant_graph, tiled_graph

    for double in (True, False):
        emit_cluster(tiled_graph(), l1_bytes=700, double_buffer=double)
    emit_cluster(requant_graph(), l1_bytes=600)  # RequantShifts fused into MatMul / Gemm tiles and skipped
    from tests.devices.siracusa.test_graph_cluster_tiling import halo_graph

    emit_cluster(halo_graph(), l1_bytes=360, double_buffer=False)  # Conv / pools by output rows with halos


def test_every_template_is_used_every_placeholder_filled_every_section_taken_both_ways():
    with trace() as seen:
        _program_models()
        _float32_models()
        _xylo_models()
        _spinnaker2_models()
        _siracusa_models()
    used: dict[tuple[str, str], tuple[set, set]] = {}
    for r in seen:
        filled, sections = used.setdefault((r.package, r.name), (set(), set()))
        filled |= r.filled
        sections |= r.sections
    problems = []
    for package in PACKAGES:
        for name in template_names(package):
            t = load(package, name)
            if (package, name) not in used:
                problems.append(f"{t.where}: never rendered")
                continue
            filled, sections = used[(package, name)]
            if t.placeholders - filled:
                problems.append(f"{t.where}: never filled {sorted(t.placeholders - filled)}")
            missing = {(c, v) for c in t.conditions for v in (True, False)} - sections
            if missing:
                problems.append(f"{t.where}: sections never taken {sorted(missing)}")
    assert problems == []
