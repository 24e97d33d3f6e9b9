"""A Xylo-aware network (a ``Sequential`` of :class:`~pondlib.devices.xylo.aware_lif.XyloLIF` layers) trained as
one integer chain (:mod:`pondlib.nn.integer_chain`, the integer mode of ``pondlib/nn/csrc/lif_chain.c``)
against the layer-by-layer path (``Sequential(..., fuse=False)``: each layer's XLA product and its own loop).

Forward: spikes and every final state equal bit for bit on hypothesis-drawn networks (sizes, one or two
synapses, hop delays, spike caps, saturating weights, input densities from 0 to 1 with counts above the input
clip, odd batches, unbatched input, T = 1, non-zero initial states). Gradients of every parameter (through the
straight-through grid) and of the input and initial states agree to float32 rounding (the kernel sums dW and
the input cotangent in another order than XLA's products), also with the residuals recomputed (above
KEEP_LIMIT: bit for bit the kept ones' gradients) and with a cotangent on the final states (the layers' own
adjoints). The dispatch is checked on the jaxpr (the chain's FFI targets), and the cases it must leave to the
layer-by-layer path (records, recurrence, float units); bad calls of ``integer_chain`` raise GraphError.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.xylo.aware import xylo_aware
from pondlib.devices.xylo.aware_lif import XyloLIF, XyloLIFState
from pondlib.errors import GraphError
from pondlib.nn import native
from pondlib.nn.integer_chain import IntegerPair, integer_chain, run
from tests.strategies import assert_pond_error, assert_trees_close

pytestmark = pytest.mark.skipif(
    not native.available() or native.engine() != "c",
    reason="the integer chain runs in the C build of the training kernels, which is not here",
)

FWD, BWD = "pondlib_lif_chain_forward", "pondlib_lif_chain_backward"


def _layers(sizes, ks, delays, caps, saturate, seed):
    """XyloLIF layers ``sizes[0] -> sizes[1] -> ...``; the first clips its input at 15 (the chip's input
    counter); ``saturate``: large positive weights, slow synaptic decay (the 16-bit limits are reached)."""
    rng = np.random.default_rng(seed)
    layers = []
    for i in range(len(sizes) - 1):
        n_in, n, k = sizes[i], sizes[i + 1], ks[i]
        w = rng.normal(size=(n_in, n * k))
        layers.append(
            XyloLIF(
                n_in,
                n,
                k,
                weight=np.abs(w) * 4 if saturate else w,
                threshold=rng.uniform(20.0, 40.0, n) if saturate else rng.uniform(0.3, 1.5, n),
                bias=rng.normal(size=n) * 0.1,
                dash_mem=rng.uniform(1.0, 6.0, n),
                dash_syn=rng.uniform(9.0, 14.0, (n, k)) if saturate else rng.uniform(0.6, 4.0, (n, k)),
                max_spikes=caps[i],
                delay_in=delays[i],
                input_clip=15.0 if i == 0 else None,
                quantize="channel",
            )
        )
    return layers


def _state(net, batch, seed):
    """A non-zero initial state in chip units (whole numbers), ``x_prev`` counts."""
    rng = np.random.default_rng(seed)
    out = []
    for m in net.layers:
        s = m.init_state(batch)
        out.append(
            XyloLIFState(
                jnp.asarray(rng.integers(-300, 300, s.isyn.shape), jnp.float32),
                jnp.asarray(rng.integers(-300, 300, s.vmem.shape), jnp.float32),
                jnp.asarray(rng.integers(0, 3, s.spikes.shape), jnp.float32),
                jnp.asarray(rng.integers(0, 3, s.x_prev.shape), jnp.float32),
            )
        )
    return tuple(out)


def _input(shape, density, top, seed):
    """Event counts 0..top (``top`` above 15 saturates the first layer's input clip) at ``density``."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, top + 1, shape) * (rng.random(shape) < density)
    return jnp.asarray(counts, jnp.float32)


def _pair(net):
    """The chain (``net``) and the layer-by-layer path (the same layers, ``fuse=False``)."""
    return net, nn.Sequential(*net.layers, fuse=False)


def _targets(fn, *args) -> str:
    return jax.make_jaxpr(fn)(*args).pretty_print()


def _assert_equal_trees(got, want):
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


networks = st.fixed_dictionaries(
    {
        "sizes": st.lists(st.integers(1, 9), min_size=2, max_size=4),
        "k": st.integers(1, 2),
        "delays": st.lists(st.booleans(), min_size=3, max_size=3),
        "caps": st.lists(st.sampled_from([1.0, 2.0, 31.0]), min_size=3, max_size=3),
        "saturate": st.booleans(),
        "seed": st.integers(0, 2**16),
    }
)
inputs = st.fixed_dictionaries(
    {
        "steps": st.integers(1, 9),
        "batch": st.sampled_from([(), (1,), (3,), (5,)]),
        "density": st.sampled_from([0.0, 0.3, 1.0]),
        "top": st.sampled_from([1, 3, 40]),
        "state": st.booleans(),
    }
)


def _build(net_cfg, in_cfg):
    sizes = net_cfg["sizes"]
    n_layers = len(sizes) - 1
    ks = [net_cfg["k"] if i < n_layers - 1 else 1 for i in range(n_layers)]
    layers = _layers(sizes, ks, net_cfg["delays"], net_cfg["caps"], net_cfg["saturate"], net_cfg["seed"])
    net = nn.Sequential(*layers)
    batch = in_cfg["batch"]
    x = _input(batch + (in_cfg["steps"], sizes[0]), in_cfg["density"], in_cfg["top"], net_cfg["seed"] + 1)
    state = _state(net, batch, net_cfg["seed"] + 2) if in_cfg["state"] else None
    return net, x, state


@settings(max_examples=5, deadline=None)
@given(net_cfg=networks, in_cfg=inputs)
def test_forward_equals_the_layer_by_layer_path_bit_for_bit(net_cfg, in_cfg):
    net, x, state = _build(net_cfg, in_cfg)
    chain, ref = _pair(net)
    y, new, rec = chain(x, state)
    y_ref, new_ref, _ = ref(x, state)
    assert rec == {}
    _assert_equal_trees((y, new), (y_ref, new_ref))
    assert FWD in _targets(lambda m: m(x, state)[0], chain)


def _loss(net, x, state, on_state=False):
    y, new, _ = net(x, state)
    w = jnp.sin(jnp.arange(y.size, dtype=jnp.float32).reshape(y.shape))
    out = jnp.sum(y * w)
    if on_state:  # a cotangent on the final states: the chain's backward pass takes the reference's
        out = out + 1e-3 * sum(jnp.sum(s.vmem * s.vmem) + jnp.sum(s.isyn) for s in new)
    return out


@settings(max_examples=3, deadline=None)
@given(net_cfg=networks, in_cfg=inputs)
def test_gradients_equal_the_layer_by_layer_path_to_float32_rounding(net_cfg, in_cfg):
    net, x, state = _build(net_cfg, in_cfg)
    state = state if state is not None else net.init_state(in_cfg["batch"])
    chain, ref = _pair(net)
    grad = jax.jit(jax.grad(_loss, argnums=(0, 1, 2)))
    got = grad(chain, x, state)
    want = grad(ref, x, state)
    if max(float(jnp.max(jnp.abs(a))) for a in jax.tree_util.tree_leaves(want)) == 0:
        _assert_equal_trees(got, want)  # no spike near the threshold: every gradient 0 on both paths
    else:
        assert_trees_close(want, got, rtol=2e-5)
    assert BWD in _targets(jax.grad(_loss), chain, x, state)


@pytest.fixture(scope="module")
def audio_net():
    """A Xylo Audio twin (16 -> 24 -> 8, delays on the hidden->output hop) with spike-count input."""
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    plain = nn.Sequential(
        nn.Linear(16, 24, key=k1), nn.LIF(24, threshold=0.2), nn.Linear(24, 8, key=k2), nn.LIF(8, threshold=0.2)
    )
    net = xylo_aware(plain, "audio3", quantize="channel")
    x = _input((3, 40, 16), 0.3, 20, 0)
    return net, x


def test_xylo_aware_trains_as_one_chain_with_the_reference_gradients(audio_net):
    net, x = audio_net
    assert net.layers[1].delay_in and net.layers[0].input_clip == 15.0
    chain, ref = _pair(net)
    jaxpr = _targets(jax.grad(_loss), chain, x, None)
    assert FWD in jaxpr and BWD in jaxpr
    y, _, _ = chain(x)
    assert float(y.sum()) > 0
    grad = jax.jit(jax.grad(_loss))
    assert_trees_close(grad(ref, x, None), grad(chain, x, None), rtol=2e-5)


def test_recomputing_the_residuals_gives_the_same_gradients(audio_net, monkeypatch):
    """Above KEEP_LIMIT the forward pass keeps no P and q and the backward pass runs each sample's loop
    again (hop delays included): the same gradients bit for bit."""
    from pondlib.nn import integer_chain

    net, x = audio_net
    state = _state(net, (3,), 7)
    stack = "f32[40,3,32]"  # P (and q) of both layers side by side: T = 40, B = 3, 24 + 8 neurons
    assert stack in _targets(jax.grad(_loss), net, x, state)
    kept = jax.jit(jax.grad(_loss, argnums=(0, 2)))(net, x, state)
    monkeypatch.setattr(integer_chain, "KEEP_LIMIT", -1)
    monkeypatch.setattr(integer_chain, "RECOMPUTE_LIMIT", 1 << 40)
    assert stack not in _targets(jax.grad(_loss), net, x, state)
    grad = jax.jit(jax.grad(_loss, argnums=(0, 2)))
    _assert_equal_trees(grad(net, x, state), kept)


def test_a_final_state_cotangent_takes_the_reference_adjoint(audio_net):
    """A loss on the final states: the chain's forward pass, the layers' own adjoints backwards."""
    net, x = audio_net
    chain, ref = _pair(net)
    state = _state(net, (3,), 5)
    grad = jax.jit(jax.grad(_loss, argnums=(0, 2)), static_argnums=3)
    jaxpr = _targets(lambda m: grad(m, x, state, True), chain)
    assert FWD in jaxpr and BWD not in jaxpr
    assert_trees_close(grad(ref, x, state, True), grad(chain, x, state, True), rtol=2e-5)


def test_what_the_chain_leaves_to_the_layers(audio_net):
    """Records, a recurrent layer and float units run layer by layer (no chain target)."""
    net, x = audio_net
    layers = _layers([4, 5, 3], [1, 1], [False, True], [31.0, 1.0], False, 0)
    x4 = _input((2, 6, 4), 0.5, 3, 1)
    assert FWD not in _targets(lambda m: m(x4, record=True)[0], nn.Sequential(*layers))
    rec = XyloLIF(5, 3, weight=np.ones((5, 3)), w_rec=np.ones((3, 3)), delay_in=True)
    floats = XyloLIF(5, 3, weight=np.ones((5, 3)), quantize=None)
    for last in (rec, floats):
        assert last.chain_pair() is None
        assert FWD not in _targets(lambda m: m(x4)[0], nn.Sequential(layers[0], last))
    assert isinstance(layers[1].chain_pair(), IntegerPair)
    assert run((nn.Linear(4, 5, key=jax.random.PRNGKey(0)), layers[1]), x4, (None, None)) is None
    states = nn.Sequential(*layers).init_state((6,))
    assert run(layers, x4, states) is not None
    for bad in (x4.astype(jnp.int32), x4[:0], x4[..., :3], x4[0]):  # the layers' own loops then (or their errors)
        assert run(layers, bad, states) is None
    assert run(layers, x4, states[:1]) is None
    assert run(layers, x4, (states[0]._replace(vmem=states[0].vmem[:, :2]),) + states[1:]) is None


def test_the_decay_factors_are_exact_powers_of_two():
    """alpha = 1 - 2^-d from exp2 in float32 gives back f = 1 - alpha = 2^-d exactly (what the kernel
    forms), for every shift the layer allows."""
    d = jnp.arange(1.0, 25.0)
    alpha = 1.0 - jnp.exp2(-d)
    np.testing.assert_array_equal(np.asarray(1.0 - alpha), 2.0 ** -np.arange(1.0, 25.0))


def _good_call(n_in=3, n=4, batch=(2,)):
    """A valid ``integer_chain`` call of two layers (the second delayed), from XyloLIF's hook."""
    layers = _layers([n_in, n, 2], [1, 1], [False, True], [31.0, 1.0], False, 0)
    pairs = tuple(m.chain_pair() for m in layers)
    states = []
    for j, m in enumerate(layers):
        s = m.init_state(batch)
        states.append((s.isyn, s.vmem, s.spikes, s.x_prev if j else None))
    return pairs, _input((5,) + batch + (n_in,), 0.5, 3, 0), tuple(states)


BAD_CALLS = {
    "pairs": lambda p, x, s, v: (list(p), x, s),
    "empty": lambda p, x, s, v: ((), x, s),
    "not a pair": lambda p, x, s, v: ((v,) + p[1:], x, s),
    "x shape": lambda p, x, s, v: (p, x[0], s),
    "no steps": lambda p, x, s, v: (p, x[:0], s),
    "n_in": lambda p, x, s, v: (p, jnp.zeros(x.shape[:-1] + (x.shape[-1] + 1,)), s),
    "weight": lambda p, x, s, v: ((p[0]._replace(weight=p[0].weight[:, :-1]),) + p[1:], x, s),
    "beta": lambda p, x, s, v: ((p[0]._replace(beta=p[0].beta[:, 0]),) + p[1:], x, s),
    "threshold": lambda p, x, s, v: (p[:1] + (p[1]._replace(threshold=p[1].threshold[:1]),), x, s),
    "first delay": lambda p, x, s, v: ((p[0]._replace(delay=True),) + p[1:], x, s),
    "first clip": lambda p, x, s, v: ((p[0]._replace(input_clip=3.0),) + p[1:], x, s),
    "states": lambda p, x, s, v: (p, x, s[:1]),
    "state tuple": lambda p, x, s, v: (p, x, (s[0][:3],) + s[1:]),
    "state shape": lambda p, x, s, v: (p, x, ((s[0][0][0],) + s[0][1:],) + s[1:]),
    "x_prev missing": lambda p, x, s, v: (p, x, s[:1] + (s[1][:3] + (None,),)),
    "x_prev shape": lambda p, x, s, v: (p, x, s[:1] + (s[1][:3] + (s[1][3][..., :-1],),)),
}


@settings(max_examples=10, deadline=None)
@given(kind=st.sampled_from(sorted(BAD_CALLS)), junk=st.one_of(st.integers(), st.text(max_size=3), st.none()))
def test_integer_chain_refuses_bad_calls_naming_the_argument(kind, junk):
    pairs, x, states = _good_call()
    args = BAD_CALLS[kind](pairs, x, states, junk)
    err = assert_pond_error(integer_chain, *args, error=GraphError)
    assert "integer_chain" in str(err) and "expected" in str(err)
