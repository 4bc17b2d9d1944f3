"""parclust: mean shift, k-means and HCA clustering on all cores (OpenMP) and NVIDIA GPUs (CUDA).

Estimators follow scikit-learn's conventions; arrays of float32, float64, uint8 and uint16 whose rows
are packed (C order, or rows of a wider array) are read by the C library in place, never copied.
"""
from ._core import info
from .hca import HCA
from .kmeans import KMeans
from .meanshift import MeanShift
from .segment import segment

__all__ = ["HCA", "KMeans", "MeanShift", "segment", "info"]
__version__ = "0.1.0"
