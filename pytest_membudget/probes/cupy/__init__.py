"""CuPy's memory pools: the device pool's bytes in use and held, the free blocks it caches
(its own and the pinned host pool's), a high-water mark and the lines that allocated the
blocks still alive, both through a CuPy memory hook. CuPy is imported only when one of these
probes is built."""
