"""Rockpool's Xylo deployment snippet runs on pondlib with only its import lines changed (issue #13, item 5).

The snippet is Rockpool's documented deployment code (``docs/devices/quick-xylo/deploy_to_xylo.ipynb``
and ``xylo-audio-intro.ipynb`` of synsense/rockpool): map the graph to a float specification, quantize
it in place with ``spec.update(q.global_quantize(**spec))``, build the configuration with
``config_from_specification(**spec)`` and simulate it with ``XyloSim.from_config(config, dt=dt)``,
calling the simulator as a Rockpool module. The network itself is built with ``pondlib.nn`` (Rockpool's
torch modules are not pondlib's), with the architecture of the tutorial: a hidden layer, a residual
block with a recurrent layer, and an output layer.

The test checks that the text of the snippet differs from Rockpool's only in its import lines, runs
it, and compares its result with pondlib's native pipeline bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.xylo import XyloSim, config_from_specification, mapper
from pondlib.devices.xylo.config import config_equal
from pondlib.devices.xylo.specification import Specification, SpecificationKeyError
from pondlib.errors import ConfigError, QuantizationError
from pondlib.transform import channel_quantize, global_quantize

#: Rockpool's deployment code, as documented (imports first, then the deployment lines).
ROCKPOOL_SNIPPET = """\
from rockpool.transform import quantize_methods as q
import rockpool.devices.xylo.syns61201 as x

# - Call the Xylo mapper on the extracted computational graph
spec = x.mapper(net.as_graph(), weight_dtype='float', threshold_dtype='float', dash_dtype='float')

# - Quantize the specification
spec.update(q.{method}(**spec))

# - Use rockpool.devices.xylo.config_from_specification to convert it to a hardware configuration
config, is_valid, msg = x.config_from_specification(**spec)
if not is_valid:
    print(msg)

# - Configure the simulator with the HW network config
modSim = x.XyloSim.from_config(config, dt=dt)

# - Evolve the input over the network, in simulation
out, _, r_d = modSim(input_spikes, record=True)
"""

#: The only edit: Rockpool's import lines -> pondlib's.
IMPORTS = {
    "from rockpool.transform import quantize_methods as q": "from pondlib.transform import quantize_methods as q",
    "import rockpool.devices.xylo.syns61201 as x": "import pondlib.devices.xylo as x",
}


def ported(snippet: str) -> str:
    lines = [IMPORTS.get(line, line) for line in snippet.splitlines()]
    changed = [a for a, b in zip(snippet.splitlines(), lines) if a != b]
    assert changed and all(line.startswith(("import ", "from ")) for line in changed)
    return "\n".join(lines) + "\n"


def tutorial_net(dt: float = 1e-3) -> nn.Sequential:
    """The tutorial's architecture (Nin = 2, Nhidden = 4, Nout = 2) in pondlib.nn, fixed weights."""
    rng = np.random.default_rng(2024)
    n_in, n_hidden, n_out = 2, 4, 2
    return nn.Sequential(
        nn.Linear(n_in, n_hidden, weight=rng.normal(size=(n_in, n_hidden))),
        nn.LIF(n_hidden, dt=dt, tau_mem=0.02, tau_syn=0.01),
        nn.Residual(
            nn.Linear(n_hidden, n_hidden, weight=rng.normal(size=(n_hidden, n_hidden))),
            nn.LIF(n_hidden, has_rec=True, threshold=10.0, dt=dt, tau_mem=0.02, tau_syn=0.01,
                   w_rec=rng.normal(size=(n_hidden, n_hidden)) / 10.0),
        ),
        nn.Linear(n_hidden, n_out, weight=rng.normal(size=(n_hidden, n_out))),
        nn.LIF(n_out, dt=dt, tau_mem=0.02, tau_syn=0.01),
    )  # fmt: skip


def inputs(T: int = 100, n_in: int = 2) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.random((T, n_in)) < 0.3  # Poisson-like boolean events, as in the tutorial


@pytest.mark.parametrize(
    "method, native_quantize", [("global_quantize", global_quantize), ("channel_quantize", channel_quantize)]
)
def test_rockpool_snippet_runs_unchanged_and_matches_native(method, native_quantize, capsys):
    dt = 1e-3
    net = tutorial_net(dt)
    x_in = inputs()
    namespace = {"net": net, "dt": dt, "input_spikes": x_in}
    exec(compile(ported(ROCKPOOL_SNIPPET.format(method=method)), "rockpool_snippet", "exec"), namespace)
    assert capsys.readouterr().out == ""  # the configuration is valid: nothing printed
    assert namespace["is_valid"] and namespace["msg"] == "valid"

    # pondlib's native pipeline
    qspec = native_quantize(mapper(net))
    config, ok, _ = config_from_specification(qspec)
    out, _, rec = XyloSim.from_config(config).evolve(x_in, record=True)

    spec = namespace["spec"]
    assert isinstance(spec, Specification) and spec.is_quantized  # quantized in place by update()
    for name in ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "dash_mem", "aliases"):
        np.testing.assert_array_equal(spec[name], getattr(qspec, name), err_msg=name)
    assert np.any(spec["aliases"] >= 0)  # the residual became an alias
    assert config_equal(namespace["config"], config)
    np.testing.assert_array_equal(namespace["out"], out)
    assert namespace["r_d"].keys() == rec.keys()
    for key in rec:
        np.testing.assert_array_equal(namespace["r_d"][key], rec[key], err_msg=key)
    assert out.any() and rec["Spikes"].any()  # the comparison is not vacuous


def test_snippet_text_differs_only_in_imports():
    text = ROCKPOOL_SNIPPET.format(method="global_quantize")
    new = ported(text)
    diff = [(a, b) for a, b in zip(text.splitlines(), new.splitlines()) if a != b]
    assert len(diff) == 2 and all(a in IMPORTS for a, _ in diff)


def test_from_specification_and_rockpool_dict_formats():
    """``XyloSim.from_specification(**spec)``, Rockpool's alias lists, 2-D weights, ``bias_hidden`` and
    ``mapped_graph`` give the same simulator as pondlib's own specification."""
    net = tutorial_net()
    spec = mapper(net)
    q_native = channel_quantize(spec)
    config, ok, _ = config_from_specification(q_native)
    assert ok
    x_in = inputs(60)
    ref = XyloSim.from_config(config).evolve(x_in, record=True)

    sim = XyloSim.from_specification(**q_native)
    np.testing.assert_array_equal(sim(x_in)[0], ref[0])

    # a Rockpool-shaped dict: one-synapse weights as 2-D, aliases as target lists, Rockpool's names
    rock = dict(q_native)
    for key in ("report", "quantization", "limits_name"):
        del rock[key]
    rock["weights_in"] = rock["weights_in"][:, :, 0]
    rock["weights_rec"] = rock["weights_rec"][:, :, 0]
    rock["aliases"] = [[int(a)] if a >= 0 else [] for a in q_native.aliases]
    rock["bias_hidden"] = rock.pop("bias")
    rock["mapped_graph"] = net.as_graph()
    config2, ok2, _ = config_from_specification(**rock)
    assert ok2 and config_equal(config2, config)

    # the float dict quantized Rockpool's way equals the native quantization
    rock_float = {k: v for k, v in spec.items() if k not in ("report", "quantization")}
    rock_float["aliases"] = [[int(a)] if a >= 0 else [] for a in spec.aliases]
    rock_q = channel_quantize(**rock_float)
    for name in ("weights_in", "weights_rec", "weights_out", "threshold", "bias", "dash_syn", "aliases"):
        np.testing.assert_array_equal(rock_q[name], q_native[name], err_msg=name)


def test_rockpool_none_defaults():
    """Rockpool's keyword defaults are None: optional fields given as None take pondlib's defaults."""
    q_native = channel_quantize(mapper(tutorial_net()))
    required = ("weights_in", "weights_out", "threshold", "threshold_out", "dash_mem", "dash_syn", "dash_mem_out")
    minimal = {k: q_native[k] for k in (*required, "dash_syn_out")}
    config, ok, msg = config_from_specification(**minimal, weights_rec=None, aliases=None, bias_hidden=None, dt=None)
    assert ok, msg
    assert not config.weights_rec.any() and np.all(config.aliases == -1) and config.dt == 1e-3
    with pytest.raises(ConfigError, match="threshold"):
        config_from_specification(**{**minimal, "threshold": None})  # a required field is never defaulted
    del minimal["dash_syn_out"]
    with pytest.raises(ConfigError, match="dash_syn_out"):
        config_from_specification(**minimal)


def test_unknown_keys_refused_by_name_everywhere():
    spec = channel_quantize(mapper(tutorial_net()))
    fields = dict(spec)
    fields["weights_inn"] = fields["weights_in"]
    with pytest.raises(SpecificationKeyError, match="weights_inn"):
        config_from_specification(**fields)
    with pytest.raises(ConfigError, match="weights_inn"):
        XyloSim.from_specification(**fields)
    with pytest.raises(QuantizationError, match="weights_inn"):
        global_quantize(**fields)
    with pytest.raises(ConfigError, match="weights_inn"):
        spec.update(weights_inn=1)
    with pytest.raises(ConfigError, match="output_mode"):
        XyloSim.from_specification(**spec, output_mode="Vmem")


def test_native_api_unchanged():
    spec = mapper(tutorial_net())
    q = channel_quantize(spec)
    assert isinstance(q, Specification) and not spec.is_quantized  # the input is not modified
    config, ok, message = config_from_specification(q)
    assert ok and message == "valid"
    config2, ok2, _ = config_from_specification(q, limits="audio3")
    assert ok2 and config2.limits_name == "Xylo Audio 3"
