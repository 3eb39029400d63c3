"""The gated example's Python side: its extension is _C (kernels.cu)."""
