"""Deterministic synthetic memory series for the statistical tests."""

from __future__ import annotations

import numpy as np

N = 400


def x(n: int = N) -> np.ndarray:
    return np.arange(n, dtype=np.float64)


def noise(seed: int, n: int = N, scale: float = 2000.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, scale, n)


def linear_leak(rate: float, seed: int = 0, n: int = N) -> np.ndarray:
    return 50e6 + rate * x(n) + noise(seed, n)


def staircase(step: float, every: int, n: int = N) -> np.ndarray:
    """A bursty leak: ``step`` bytes every ``every`` iterations (RSS pages behave so too)."""
    return 50e6 + step * (x(n) // every)


def late_leak(rate: float, onset: int, seed: int = 0, n: int = N) -> np.ndarray:
    return 50e6 + rate * np.maximum(x(n) - onset, 0) + noise(seed, n)


def plateau(rate: float, fill: int, seed: int = 0, n: int = N) -> np.ndarray:
    """A cache that grows for ``fill`` iterations and then stops."""
    return 50e6 + rate * np.minimum(x(n), fill) + noise(seed, n)


def sawtooth(rate: float, period: int, seed: int = 0, n: int = N) -> np.ndarray:
    """A buffer that grows and is cleared every ``period`` iterations."""
    return 50e6 + rate * (x(n) % period) + noise(seed, n)


def spikes(height: float, every: int, seed: int = 0, n: int = N) -> np.ndarray:
    y = 50e6 + noise(seed, n)
    y[::every] += height
    return y


def flat_noise(seed: int = 0, n: int = N, scale: float = 2000.0) -> np.ndarray:
    return 50e6 + noise(seed, n, scale)
