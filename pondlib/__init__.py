"""pondlib: spiking neural networks from JAX training to bit-precise neuromorphic deployment."""

__version__ = "0.1.0"
