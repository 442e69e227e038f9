"""Helpers of the test suite: fakes, synthetic series, inner-suite writers and runners."""
