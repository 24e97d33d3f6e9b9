"""Device packages: ``pondlib.devices.xylo``, ``pondlib.devices.spinnaker2``, ``pondlib.devices.siracusa``.

Each device package has the same core file set (``limits``, ``mapper``, ``config``, ``sim``, plus what the
target needs: Xylo ``hdk``, SpiNNaker2 ``timing`` and ``dnn``, Siracusa ``tiling`` and ``cycles``) and
imports only from :mod:`pondlib.devices.core`, never from a sibling device.
"""
