"""User-facing graph builders: thin functions that append ops; no kernels, no threads."""
from .io import layers_data as data

__all__ = ["data"]
