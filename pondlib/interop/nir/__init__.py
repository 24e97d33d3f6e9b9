r"""NIR import and export: :func:`from_nir` / :func:`load_nir`, :func:`to_nir` / :func:`write`.

NIR (the Neuromorphic Intermediate Representation, ``nir`` package) stores *continuous-time*
equations and **no time step**. Moving a network between frameworks therefore needs three explicit
decisions, which this module makes visible instead of guessing silently.

**1. Discretization.** Each NIR neuron becomes a pondlib module from :mod:`pondlib.nn.neurons` whose
docstring states its discrete update; with step ``dt`` (seconds), ``tau dv/dt = (v_leak - v) + r I``
becomes forward Euler ``v += dt/tau ((v_leak - v) + r I)`` (``decay="euler"``), or, for Rockpool's
convention, an exponential decay ``v = e^{-dt/tau} v + ...`` (``decay="exp"``). ``IF``/``I`` read
each step's input as an impulse (``v += r x``). Weights, convolutions, pooling and flatten act per step.

**2. The exporter's convention** (how it hid ``dt`` in the parameters; the README of the shared test
data lists them):

==============  =====================================  ==============================================
convention      parameters written                      detected (``convention="auto"``) when
==============  =====================================  ==============================================
``pondlib``     metadata ``pondlib_format`` (ours)      the graph metadata says so; ``dt`` is read
                                                        from the metadata, modules rebuilt exactly
``dt_scaled``   ``r = tau_mem/dt``, ``w_in = tau_syn/dt``  ``tau/r`` is one value for every neuron (and
                (snnTorch, Lava)                        ``tau_syn/w_in`` agrees): that value is the dt
``unit``        ``r = 1``, ``w_in = 1`` (Norse, Sinabs)  every ``r`` and ``w_in`` is 1: dt is not in
                                                        the file and must be passed
``rockpool``    ``r = tau e^{-dt/tau} / dt``            one dt solves that for every neuron; decays
                                                        become ``exp``
``unknown``     anything else (e.g. Spyx ``r = beta``)  none of the above: Euler with the given dt,
                                                        and a note says so
==============  =====================================  ==============================================

The detected convention, the dt used and every repair are returned in :class:`NIRImport`
(``load_nir``) and the user can override both (``convention=``, ``dt=``, ``decay=``). Under
``dt_scaled`` and ``unit`` the Euler update *is* the exporter's own discrete model, so a file
simulated with the exporter's dt reproduces its traces (the Norse LIF below reproduces
``lif_norse.csv``); with another dt the dynamics change (the same Norse file at dt = 1e-3 gives 34
spikes instead of 4) and a note says so when the file implies a different dt.

**3. Reset.** NIR up to 1.0.5 meant reset by subtraction, from 1.0.6 reset to ``v_reset`` (default
0); a file cannot say which one its network was trained with. ``reset="v_reset"`` (default) follows
the current standard; ``"subtract"`` subtracts the threshold; ``"zero"`` forces 0.

**4. The exporter's discrete rules.** ``convention="snntorch"`` (``"lava"``, ``"norse"``, ``"rockpool"``,
``"sinabs"``, ``"spyx"``) also applies how that framework ran its networks: snnTorch's reset computed
from the stored membrane, Lava's one-step synaptic delay and (``numerics="int"``) its fixed-point CUBA;
the table and the equations are in :mod:`pondlib.interop.nir.exporters` (:data:`EXPORTER_RULES`).

**Graphs.** Edges into one node add. Nested ``NIRGraph`` cells are inlined (names joined with ``.``).
Cycles (recurrent weights) are cut at the outputs of neurons: a recurrent edge carries the previous
step's output (:class:`~pondlib.nn.graphnet.GraphNetwork`). A plain chain with a flat input imports
as :class:`~pondlib.nn.Sequential` (or the single module); anything else as a ``GraphNetwork``.

**Export** (``to_nir``): every node carries ``pondlib_*`` metadata so that :func:`from_nir` rebuilds
the identical modules; a foreign reader gets the closest standard meaning. pondlib's
:class:`~pondlib.nn.LIF` (``isyn = e^{-dt/tau_syn}(isyn + x)``, ``v = e^{-dt/tau_mem} v + isyn + b``,
multi-spike, reset by subtraction) is written as a ``CubaLIF`` in the ``dt_scaled`` convention:
``tau_* `` unchanged, ``r = tau_mem/dt``, ``w_in = tau_syn/dt``, ``v_leak = b tau_mem/dt``,
``v_threshold = threshold``, ``v_reset = 0`` -- a foreign Euler reader gets ``1 - dt/tau`` instead of
``e^{-dt/tau}``, binary spikes and its own reset. A recurrent LIF is a nested graph
(``CubaLIF`` + ``Linear`` back-edge), a ``Residual`` a nested graph with a skip edge (sum at the
output). What NIR cannot represent (a LIF with several synapses per neuron, a flat-to-spatial
reshape) raises :class:`~pondlib.errors.NIRError` naming the module.

Example (round trip):
    >>> import numpy as np, jax.numpy as jnp
    >>> from pondlib import nn
    >>> net = nn.Sequential(nn.Linear(3, 2, weight=np.ones((3, 2)), bias=True), nn.LIF(2, dt=1e-3))
    >>> g = to_nir(net)
    >>> sorted(g.nodes), type(g.nodes["1_LIF"]).__name__
    (['0_Linear', '1_LIF', 'input', 'output'], 'CubaLIF')
    >>> back = from_nir(g, dt=None)
    >>> x = jnp.ones((5, 3))
    >>> bool(jnp.all(back(x)[0] == net(x)[0])), type(back).__name__
    (True, 'Sequential')
"""

from pondlib.interop.nir.common import CONVENTIONS, FORMAT_VERSION
from pondlib.interop.nir.exporters import EXPORTER_RULES
from pondlib.interop.nir.reader import IMPORTERS, NIRImport, from_nir, load_nir, read_graph
from pondlib.interop.nir.writer import EXPORTERS, to_nir, write

__all__ = [
    "from_nir",
    "load_nir",
    "to_nir",
    "write",
    "read_graph",
    "NIRImport",
    "IMPORTERS",
    "EXPORTERS",
    "CONVENTIONS",
    "FORMAT_VERSION",
    "EXPORTER_RULES",
]
