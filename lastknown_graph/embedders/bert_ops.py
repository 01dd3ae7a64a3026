"""The elementwise operations of a BERT encoder in numpy, float32 throughout, each as torch computes it.

numpy has no ``erf``, and BERT's GELU is the exact one (``0.5 x (1 + erf(x / sqrt 2))``, not the tanh
approximation), so ``erfc`` comes from the Chebyshev fit of Numerical Recipes (``erfcc``, fractional error below
1.2e-7 everywhere): close to float32's own rounding, which is what lets the vectors match torch's to 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float32]

# Numerical Recipes' erfcc: erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), for z >= 0; highest degree first.
_ERFC_COEFFICIENTS = (
    0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
    -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223,
)
_INVERSE_SQRT_2 = np.float32(1 / math.sqrt(2))


def gelu(x: Array) -> Array:
    """Exact GELU, ``0.5 x (1 + erf(x / sqrt 2))``, as a new array (written in place over temporaries: it runs
    on every layer's widest activations, where allocations cost as much as the arithmetic)."""
    z = np.abs(x)
    z *= _INVERSE_SQRT_2
    t = z * np.float32(0.5)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    result = np.full_like(x, _ERFC_COEFFICIENTS[0])
    for coefficient in _ERFC_COEFFICIENTS[1:]:
        result *= t
        result += np.float32(coefficient)
    z *= z
    result -= z
    np.exp(result, out=result)
    result *= t  # erfc(|y|), y = x / sqrt 2
    # 1 + erf(y) is 2 - erfc(|y|) for y >= 0 and erfc(|y|) for y < 0: each side without cancellation. In
    # arithmetic, not np.where: a branch per element on signs that alternate at random is ten times slower.
    correction = result * np.float32(-2.0)
    correction += np.float32(2.0)
    correction *= (x >= 0).astype(np.float32)
    result += correction
    result *= x
    result *= np.float32(0.5)
    return result


def layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    """LayerNorm over the last axis (biased variance, as torch)."""
    centred: Array = x - x.mean(axis=-1, keepdims=True)
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    centred /= np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


def softmax_in_place(scores: Array) -> Array:
    """Softmax over the last axis, overwriting ``scores``."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores
