"""infersight: an observability distribution for LLM serving on vLLM and NVIDIA GPUs."""

__version__ = "0.1.0"
